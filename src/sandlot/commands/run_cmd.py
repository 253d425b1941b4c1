"""`sandlot run`: the whole loop in one line: a repository in, a command, its commits back."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from .. import git, progress
from ..cli import (
    EXIT_CODES,
    SANDLOT_FAILED,
    add_provider_arguments,
    check_host_dir,
    check_seconds,
    in_cli_words,
    provider_from_args,
)
from ..errors import ConfigurationError


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "run",
        help="run a command on a repository in a fresh sandbox; its commits come back",
        description="Put the repository's HEAD (with --include-uncommitted, its uncommitted "
        "changes too) into a fresh sandbox, run the command in the checkout with output "
        "streamed live, bring the commits it made back as a new branch of the repository, "
        "print what came back, close the sandbox and exit with the command's exit code. The "
        "host's checked-out branch, index and work tree are never touched.",
        epilog=EXIT_CODES + "examples:\n"
        "  sandlot run --repo . --branch sandlot/fix-1 -- sh -c 'make fix && git commit -qam fix'\n"
        "  sandlot run --repo . --branch sandlot/fmt --commit-uncommitted 'gofmt' -- gofmt -w .\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_provider_arguments(parser)
    parser.add_argument("--repo", default=".", help="host git repository (default: .)")
    parser.add_argument("--ref", default="HEAD", help="commit to start from (default: HEAD)")
    parser.add_argument("--branch", required=True, help="host branch the commits come back as")
    parser.add_argument("--force", action="store_true", help="move --branch if it exists")
    parser.add_argument("--depth", type=int, help="bring only this many commits of history")
    parser.add_argument("--include-uncommitted", action="store_true",
                        help="also bring the work tree's uncommitted changes (as one commit)")
    parser.add_argument("--commit-uncommitted", metavar="MESSAGE",
                        help="commit what the command left uncommitted, with this message")
    parser.add_argument("--timeout", type=float, help="seconds before the command is ended")
    parser.add_argument("--idle-timeout", type=float, metavar="SECONDS",
                        help="end the command when it prints nothing for this long")
    parser.add_argument("-q", "--quiet", action="store_true", help="no status lines on stderr")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- followed by the command")
    parser.set_defaults(handler=run, failure_code=SANDLOT_FAILED)


async def run(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("sandlot run: no command given; usage: sandlot run --repo . --branch NAME -- CMD",
              file=sys.stderr)
        return 2
    # Every refusal that depends only on the input comes before a sandbox is made.
    check_host_dir(args.repo, "--repo")
    check_seconds(args, "--timeout", "--idle-timeout")
    if args.depth is not None and args.depth < 1:
        raise ConfigurationError(f"--depth must be 1 or more, got {args.depth}")
    out = progress.console()

    def status(text: str) -> None:
        if not args.quiet:
            progress.say(out, f"sandlot: {text}")

    provider = provider_from_args(args)
    started = time.monotonic()
    status(f"creating {provider.name} sandbox")
    async with provider.session() as sandbox:
        with progress.activity(out, f"putting {args.repo} ({args.ref}) into the sandbox",
                               quiet=args.quiet):
            checkout = await git.push_in(
                sandbox, repo=args.repo, ref=args.ref, depth=args.depth,
                include_uncommitted=args.include_uncommitted,
            )
        status(f"sandbox {sandbox.name} ready ({time.monotonic() - started:.1f}s); "
               f"repository at {checkout.path} on {checkout.branch} {checkout.commit[:12]}"
               + (" + uncommitted changes" if checkout.snapshot else ""))
        for note in checkout.notes:
            status(f"note: {in_cli_words(note)}")
        command: str | list[str] = cmd[0] if len(cmd) == 1 else cmd
        result = await sandbox.exec(
            command, cwd=checkout.path, timeout=args.timeout, idle_timeout=args.idle_timeout,
            max_output=0,
            on_stdout=lambda line: print(line, flush=True),
            on_stderr=lambda line: print(line, file=sys.stderr, flush=True),
        )
        status(f"command exit code {result.exit_code}"
               + (f" (silent for {args.idle_timeout}s)" if result.timed_out_by == "idle_timeout"
                  else f" (timed out after {args.timeout}s)" if result.timed_out else ""))
        back = await git.pull_out(sandbox, repo=args.repo, branch=args.branch,
                                  commit_uncommitted=args.commit_uncommitted, force=args.force)
    if back.branch is None:
        status("no new commits came back; no branch was written")
    else:
        status(f"{len(back.commits)} commit(s) came back as branch {back.branch} "
               f"({back.head[:12]}), {len(back.files)} file(s) changed:")
        for commit in back.commits:
            progress.say(out, f"  {commit.sha[:12]} {commit.subject} ({commit.author})")
        for change in back.files:
            moved = f"{change.old_path} -> " if change.old_path else ""
            progress.say(out, f"  {change.status} {moved}{change.path}")
    for note in back.notes:
        status(f"note: {in_cli_words(note)}")
    return 124 if result.timed_out else result.exit_code
