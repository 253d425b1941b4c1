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
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from ._version import __version__
from .errors import SandlotError

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


def provider_from_args(args: argparse.Namespace) -> Any:
    """Build the provider the shared flags describe."""
    from .config import config_mapping, provider_from_config, provider_from_env

    if args.provider_config:
        data = config_mapping(args.provider_config)
        if args.provider and data.get("type", args.provider) != args.provider:
            raise SystemExit("--provider and --provider-config name different backends")
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
    """Run the command so that SIGTERM ends it as Ctrl-C does: cancelled, its sandboxes closed
    (the default action would kill the process and leave them, and their commands, behind).
    Commands with signal handling of their own (serve, mcp, fanout: `own_signals`) keep it."""
    if getattr(args, "own_signals", False):
        return await handler(args)
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    terminated = False

    def on_sigterm() -> None:
        nonlocal terminated
        terminated = True
        if task is not None:
            task.cancel()

    try:
        loop.add_signal_handler(signal.SIGTERM, on_sigterm)
    except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or Windows
        return await handler(args)
    try:
        return await handler(args)
    except asyncio.CancelledError:
        if terminated:
            print("sandlot: terminated; the sandbox was closed", file=sys.stderr)
            return 128 + signal.SIGTERM
        raise
    finally:
        loop.remove_signal_handler(signal.SIGTERM)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        return asyncio.run(_terminable(handler, args))
    except SandlotError as exc:
        print(f"sandlot: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
