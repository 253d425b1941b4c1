"""The `sandlot` command (also `python -m sandlot`).

Subcommands live in their own modules and register through `SUBCOMMANDS`: each entry is a
module path exposing `register(subparsers)`, which adds a parser whose `handler` default is
`async def handler(args) -> int`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import signal
import sys
import traceback
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from ._interrupts import Interrupts
from ._version import __version__
from .errors import HINTS, ConfigurationError, Hint, SandlotError

#: docker run's convention, for the commands that run a command of the user's (exec, run):
#: sandlot itself failed or refused its input; 126 and 127 come from the sandbox's shell
#: (command not executable / not found); anything else is the command's own status.
SANDLOT_FAILED = 125

#: The exit statuses of exec and run, for their --help.
EXIT_CODES = (
    "exit status: the command's own; 124 when --timeout or --idle-timeout ended it; 125 when "
    "sandlot\nitself failed or refused the input; 126 when the command cannot be "
    "executed;\n127 when it is not found; 2 for a command line that cannot be parsed.\n\n"
)

#: How the command line offers each fix that is a keyword argument in Python (errors.Hint).
CLI_WORDING: dict[str, str] = {
    "force": "pass --force",
    "commit_uncommitted": "pass --commit-uncommitted MESSAGE",
    "coder_binary": (
        """set it in the provider configuration: --provider-config '{"type": "coder", """
        """"coder_binary": "/path/to/coder"}' (or the same JSON in $SANDLOT_PROVIDER)"""
    ),
}


def in_cli_words(text: str, hints: Sequence[Hint] = HINTS) -> str:
    """`text` with each hint's Python wording replaced by the command line's."""
    for hint in hints:
        if hint.keyword in CLI_WORDING:
            text = text.replace(hint.python, CLI_WORDING[hint.keyword])
    return text


def error_text(exc: SandlotError) -> str:
    """An error as the command line words it."""
    return in_cli_words(str(exc), [exc.hint] if exc.hint is not None else HINTS)

#: Modules that add subcommands (imported lazily so `sandlot --help` stays fast).
SUBCOMMANDS: list[str] = [
    "sandlot.commands.exec_cmd",
    "sandlot.verify.cli",
    "sandlot.commands.gc",
    "sandlot.commands.serve",
    "sandlot.commands.fanout_cmd",
    "sandlot.commands.run_cmd",
    "sandlot.commands.mcp_cmd",
]

Handler = Callable[[argparse.Namespace], Coroutine[Any, Any, int]]


def add_provider_arguments(parser: argparse.ArgumentParser) -> None:
    """The provider flags every sandbox-using subcommand shares."""
    group = parser.add_argument_group("sandbox provider")
    group.add_argument(
        "--provider",
        default=None,
        help="backend to use: local (default), docker or coder; details come from "
        "--provider-config or $SANDLOT_PROVIDER",
    )
    group.add_argument(
        "--provider-config",
        metavar="JSON",
        default=None,
        help='provider options as JSON, e.g. \'{"type": "docker", "image": "x", '
        '"on_close": "delete"}\' (overrides $SANDLOT_PROVIDER)',
    )


def check_seconds(args: argparse.Namespace, *flags: str) -> None:
    """Refuse a time limit that is not a positive number of seconds (before any sandbox)."""
    for flag in flags:
        value = getattr(args, flag.lstrip("-").replace("-", "_"))
        if value is not None and not value > 0:  # NaN too
            raise ConfigurationError(f"{flag} must be a positive number of seconds, got {value}")


def check_host_dir(path: str, flag: str) -> None:
    """Refuse a host directory that is not there (before any sandbox)."""
    from pathlib import Path

    from .errors import HostPathNotFoundError

    where = Path(path)
    if not where.exists():
        raise HostPathNotFoundError(
            f"{flag} {path}: host path does not exist; check the path (relative paths resolve "
            "against the current directory)"
        )
    if not where.is_dir():
        raise ConfigurationError(f"{flag} {path}: not a directory; give a directory")


def provider_from_args(args: argparse.Namespace) -> Any:
    """Build the provider the shared flags describe."""
    from .config import config_mapping, provider_from_config, provider_from_env

    if args.provider_config:
        try:
            data = config_mapping(args.provider_config)
        except ConfigurationError as exc:
            raise ConfigurationError(f"--provider-config: {exc}") from None
        if args.provider and data.get("type", args.provider) != args.provider:
            raise ConfigurationError(
                f"--provider {args.provider} and --provider-config (type "
                f"{data.get('type')!r}) name different backends; drop one of them"
            )
        data.setdefault("type", args.provider or "local")
        return provider_from_config(data)
    if args.provider in (None, "local"):
        return provider_from_env() if args.provider is None else provider_from_config(
            {"type": "local"}
        )
    return provider_from_env({"type": args.provider})


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sandlot",
        description="Run code in isolated sandboxes: local directories, Docker containers or "
        "Coder workspaces, all behind one interface.",
        epilog="Run 'sandlot <command> --help' for a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"sandlot {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="<command>")
    for module_name in SUBCOMMANDS:
        importlib.import_module(module_name).register(subparsers)
    return parser


async def _terminable(handler: Handler, args: argparse.Namespace) -> int:
    """Run the command under the one signal policy (`sandlot._interrupts`): the first SIGINT or
    SIGTERM cancels it, so its sandboxes are closed and its commits brought back (the default
    actions would kill the process, or raise KeyboardInterrupt anywhere, and leave them); a
    second cancels that clean-up too; the status is 128 + the first signal. Commands that
    say what their stop is (serve, mcp, fanout: `own_signals`) install the policy themselves."""
    if getattr(args, "own_signals", False):
        return await handler(args)
    task = asyncio.current_task()

    def cancel(_signum: int, *_count: int) -> None:
        if task is not None:
            task.cancel()

    interrupts = Interrupts(cancel)
    with interrupts:
        try:
            return await handler(args)
        except asyncio.CancelledError:
            if interrupts.exit_code is None:
                raise
            how = "terminated" if interrupts.signal == signal.SIGTERM else "interrupted"
            print(f"sandlot: {how}; the sandbox was closed", file=sys.stderr)
            return interrupts.exit_code


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    failed: int = getattr(args, "failure_code", 1)
    try:
        return asyncio.run(_terminable(handler, args))
    except SandlotError as exc:
        print(f"sandlot: error: {error_text(exc)}", file=sys.stderr)
        return failed
    except KeyboardInterrupt:
        return 130
    except Exception:
        # A bug of sandlot's: the traceback is for the report, the status says it was ours
        # (a 1 would read as the command's own failure).
        traceback.print_exc()
        return failed


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
