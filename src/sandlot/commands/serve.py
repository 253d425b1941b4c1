"""`sandlot serve`: the HTTP sandbox server in front of one sandbox of any provider."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ..cli import add_provider_arguments, provider_from_args


def add_origin_arguments(parser: argparse.ArgumentParser) -> None:
    """--allowed-host and --allowed-origin, shared with `sandlot mcp --http` (adr/0032)."""
    parser.add_argument(
        "--allowed-host", action="append", default=[], metavar="NAME[:PORT]",
        help="also answer requests whose Host header names this (e.g. behind a reverse "
        "proxy); without a token only loopback names are answered (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--allowed-origin", action="append", default=[], metavar="SCHEME://HOST[:PORT]",
        help="also answer requests from pages of this origin; by default only pages on "
        "localhost, 127.0.0.1 and [::1] (repeatable)",
    )  # fmt: skip


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve POST /execute and GET /health over HTTP (needs sandlot[server])",
        description="Create a sandbox, fix its runtime mode (python, golang, node or shell), "
        "and run submitted code in it over HTTP until SIGTERM/SIGINT; then close the sandbox "
        "as the provider's on_close says. Binding anything but loopback requires a bearer "
        "token in $SANDLOT_TOKEN.",
        epilog="examples:\n"
        "  sandlot serve --port 8080\n"
        "  SANDLOT_MODE=golang sandlot serve --provider docker --provider-config "
        '\'{"image": "golang:1.22", "on_close": "delete"}\'\n'
        "  SANDLOT_TOKEN=$(openssl rand -hex 24) sandlot serve --host 0.0.0.0\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_provider_arguments(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (0: any free port)")
    parser.add_argument(
        "--mode",
        default=None,
        help="python, golang, node or shell (default: $SANDLOT_MODE, else detected)",
    )
    parser.add_argument("--max-concurrency", type=int, help="runs at once (default 4)")
    parser.add_argument("--max-timeout", type=float, help="largest timeout, seconds (default 300)")
    parser.add_argument("--default-timeout", type=float, help="timeout if none given (default 30)")
    parser.add_argument("--max-body-bytes", type=int, help="largest request body (default 1 MiB)")
    parser.add_argument(
        "--max-code-chars", type=int, help="longest code, characters (default 262144)"
    )
    parser.add_argument(
        "--shutdown-grace", type=float, help="seconds running requests get on SIGTERM (default 10)"
    )
    parser.add_argument("--log-level", default="info", help="uvicorn log level (default info)")
    parser.add_argument(
        "--secret", action="append", default=[], metavar="NAME[=ENVVAR|=@FILE]",
        help="put a secret in every run's environment as $NAME, its value from the host "
        "variable ENVVAR (default NAME) or a file, never from argv; responses show "
        "[secret:NAME] instead of it (repeatable)",
    )
    add_origin_arguments(parser)
    parser.set_defaults(handler=run, own_signals=True)


def _settings(args: argparse.Namespace) -> Any:
    from pydantic import ValidationError

    from ..config_errors import invalid
    from ..modes import configured_mode
    from ..secrets import secrets_from_specs
    from ..server.settings import TOKEN_ENV, ServerSettings

    values: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "mode": configured_mode(args.mode),
        "token": os.environ.get(TOKEN_ENV) or None,
        "log_level": args.log_level,
        "allowed_hosts": args.allowed_host,
        "allowed_origins": args.allowed_origin,
        "env": secrets_from_specs(args.secret, "--secret"),
    }
    for name in ("max_concurrency", "max_timeout", "default_timeout", "max_body_bytes",
                 "max_code_chars", "shutdown_grace"):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    try:
        settings = ServerSettings(**values)
    except ValidationError as exc:
        raise invalid("server settings", exc) from None
    settings.check_binding()  # before a sandbox is made, or even announced
    return settings


async def run(args: argparse.Namespace) -> int:
    settings = _settings(args)  # bad flags fail before the heavy imports below
    try:
        from ..server.runner import SandboxServer
    except ImportError as exc:
        print(
            f"sandlot serve needs the server extra ({exc.name} is missing): "
            "pip install 'sandlot[server]'",
            file=sys.stderr,
        )
        return 2
    provider = provider_from_args(args)
    print(f"sandlot serve: creating a {provider.name} sandbox", file=sys.stderr, flush=True)

    def ready(server: SandboxServer) -> None:
        assert server.service is not None
        service = server.service
        print(
            f"sandlot serve: listening on {server.url} (mode={service.mode}, "
            f"{service.runtime_version}, provider={service.sandbox.provider}, "
            f"sandbox={service.sandbox.name})",
            file=sys.stderr,
            flush=True,
        )

    return await SandboxServer(settings, provider).run(on_ready=ready)
