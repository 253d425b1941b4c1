"""`sandlot exec`: run one command in a fresh sandbox, streaming its output live."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from typing import Any

from .._shell import validate_env
from ..cli import (
    EXIT_CODES,
    SANDLOT_FAILED,
    add_provider_arguments,
    check_host_dir,
    check_seconds,
    provider_from_args,
)
from ..errors import ConfigurationError
from ..progress import activity, console, describe_size, tree_size
from ..secrets import EnvValue, reveal, secrets_from_specs


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "exec",
        help="run a command in a fresh sandbox",
        description="Create a sandbox, optionally copy a directory into its worktree, run one "
        "command there with output streamed live, close the sandbox, and exit with the "
        "command's exit code. One argument after -- runs under 'sh -c'; several are an argv.",
        epilog=EXIT_CODES + "examples:\n"
        "  sandlot exec -- uname -a\n"
        "  sandlot exec --copy-in examples/wordcount -- python3 -m unittest -v\n"
        "  sandlot exec --forward 8000 -- python3 -m http.server 8000\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_provider_arguments(parser)
    parser.add_argument(
        "--copy-in", metavar="DIR", help="host directory whose contents go into the worktree"
    )
    parser.add_argument(
        "--env", metavar="KEY=VALUE", action="append", default=[], help="extra environment"
    )
    parser.add_argument(
        "--secret", metavar="NAME[=@FILE]", action="append", default=[],
        help="pass the host variable NAME (or a file's contents) to the command as $NAME, as a "
        "secret: the command's output shows [secret:NAME] instead of it; never put a value on "
        "the command line (repeatable)",
    )
    parser.add_argument(
        "--secret-env", metavar="NAME=ENVVAR", action="append", default=[],
        help="like --secret, with the value from the host variable ENVVAR (or NAME=@FILE)",
    )
    parser.add_argument(
        "--forward", metavar="[LOCAL:]PORT", action="append", default=[],
        help="reach sandbox port PORT at 127.0.0.1:LOCAL on this host while the command runs "
        "(LOCAL defaults to a free port; the URL is printed); repeatable",
    )
    parser.add_argument("--cwd", help="working directory inside the sandbox (default: worktree)")
    parser.add_argument("--timeout", type=float, help="seconds before the command is ended")
    parser.add_argument("--idle-timeout", type=float, metavar="SECONDS",
                        help="end the command when it prints nothing for this long")
    parser.add_argument("-q", "--quiet", action="store_true", help="no status lines on stderr")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- followed by the command")
    parser.set_defaults(handler=run, failure_code=SANDLOT_FAILED)


def _status(args: argparse.Namespace, message: str) -> None:
    if not args.quiet:
        print(f"sandlot: {message}", file=sys.stderr, flush=True)


async def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print(
            "sandlot exec: no command given; usage: sandlot exec [options] -- CMD",
            file=sys.stderr,
        )
        return 2
    env: dict[str, EnvValue] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"sandlot exec: --env needs KEY=VALUE, got {item!r}", file=sys.stderr)
            return 2
        env[key] = value
    forwards: list[tuple[int, int]] = []
    for item in args.forward:
        local, _, remote = item.rpartition(":")
        try:
            forwards.append((int(local or 0), int(remote)))
        except ValueError:
            print(f"sandlot exec: --forward needs PORT or LOCAL:PORT, got {item!r}",
                  file=sys.stderr)
            return 2
    for item in args.secret_env:
        if "=" not in item:
            print(f"sandlot exec: --secret-env needs NAME=ENVVAR, got {item!r}", file=sys.stderr)
            return 2
    secrets = secrets_from_specs([*args.secret, *args.secret_env], "--secret")
    env.update(secrets)
    # Every refusal that depends only on the input comes before a sandbox is made.
    validate_env(reveal(env))
    for item, (local, remote) in zip(args.forward, forwards, strict=True):
        if not (0 <= local <= 65535 and 1 <= remote <= 65535):
            raise ConfigurationError(
                f"--forward {item}: ports are 1-65535 (a LOCAL of 0 picks a free one)"
            )
    check_seconds(args, "--timeout", "--idle-timeout")
    if args.copy_in:
        check_host_dir(args.copy_in, "--copy-in")
    provider = provider_from_args(args)
    started = time.monotonic()
    _status(args, f"creating {provider.name} sandbox")
    async with provider.session() as sandbox:
        _status(args, f"sandbox {sandbox.name} ready ({time.monotonic() - started:.1f}s), "
                f"worktree {sandbox.worktree}")
        if args.copy_in:
            files, size = await asyncio.to_thread(tree_size, args.copy_in)
            what = f"copying {args.copy_in} ({describe_size(files, size)}) into the worktree"
            with activity(console(), what, quiet=args.quiet):
                await sandbox.copy_in(args.copy_in, sandbox.worktree)
        command: str | list[str] = cmd[0] if len(cmd) == 1 else cmd
        async with contextlib.AsyncExitStack() as stack:
            for local, remote in forwards:
                address = await stack.enter_async_context(
                    sandbox.forward_port(remote, local_port=local))
                print(f"sandlot: sandbox port {remote} is at {address.url}", file=sys.stderr,
                      flush=True)
            result = await sandbox.exec(
                command,
                cwd=args.cwd,
                env=env,
                timeout=args.timeout,
                idle_timeout=args.idle_timeout,
                on_stdout=lambda line: print(line, flush=True),
                on_stderr=lambda line: print(line, file=sys.stderr, flush=True),
                max_output=0,
                # The terminal is a person's: what they see (and what scrollback, CI logs and
                # screen shares keep) shows [secret:NAME], never a value.
                scrub=bool(secrets),
            )
        if result.timed_out_by == "idle_timeout":
            _status(args, f"command printed nothing for {args.idle_timeout}s (--idle-timeout)")
        elif result.timed_out:
            _status(args, f"command timed out after {args.timeout}s")
        _status(args, f"exit code {result.exit_code} after {result.duration:.1f}s; closing")
    return 124 if result.timed_out else result.exit_code
