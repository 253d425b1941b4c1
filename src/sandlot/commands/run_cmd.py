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

    await git.roundtrip.check_target(args.repo, args.branch, force=args.force)
    await git.roundtrip.resolve(args.repo, args.ref)
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

        async def bring_back() -> git.PullResult:
            # rescue: a branch taken meanwhile never costs the commits (a rescue ref instead).
            return await git.pull_out(sandbox, repo=args.repo, branch=args.branch,
                                      commit_uncommitted=args.commit_uncommitted,
                                      force=args.force, rescue=True)

        try:
            result = await sandbox.exec(
                command, cwd=checkout.path, timeout=args.timeout,
                idle_timeout=args.idle_timeout, max_output=0,
                on_stdout=lambda line: print(line, flush=True),
                on_stderr=lambda line: print(line, file=sys.stderr, flush=True),
            )
            status(f"command exit code {result.exit_code}"
                   + (f" (silent for {args.idle_timeout}s)"
                      if result.timed_out_by == "idle_timeout"
                      else f" (timed out after {args.timeout}s)" if result.timed_out else ""))
            back = await bring_back()
        except BaseException as exc:  # Ctrl-C, SIGTERM, a failure: the commits still come back
            await _rescue(bring_back, exc, out, checkout, status)
            raise
    _report(back, checkout, out, status)
    return 124 if result.timed_out else result.exit_code


#: Seconds an interrupted or failed run spends bringing the commits back before it gives up.
RESCUE_BOUND = 120.0


async def _rescue(bring_back: Any, exc: BaseException, out: Any, checkout: git.GitCheckout,
                  status: Any) -> None:
    """Bring the commits back after `exc` ended the run early, within RESCUE_BOUND; what
    happened is said on stderr. A second Ctrl-C or SIGTERM cancels this too."""
    import asyncio

    task = asyncio.current_task()
    if isinstance(exc, asyncio.CancelledError) and task is not None:
        task.uncancel()  # this task's awaits run again; the cancel is re-raised by the caller
    why = "interrupted" if isinstance(exc, asyncio.CancelledError | KeyboardInterrupt) else \
        f"failed ({type(exc).__name__})"
    status(f"{why}: bringing the commits made so far back before the sandbox is closed "
           f"(at most {RESCUE_BOUND:g}s; Ctrl-C again gives up)")
    try:
        async with asyncio.timeout(RESCUE_BOUND):
            back = await bring_back()
    except TimeoutError:
        status(f"gave up bringing the commits back after {RESCUE_BOUND:g}s")
        return
    except Exception as error:  # the run's own failure is the one raised
        status(f"could not bring the commits back: {error}")
        return
    _report(back, checkout, out, status)


def _report(back: git.PullResult, checkout: git.GitCheckout, out: Any, status: Any) -> None:
    where = (f"branch {back.branch}" if back.branch is not None else back.rescue_ref)
    if where is None:
        status("no new commits came back; no branch was written")
    else:
        status(f"{len(back.commits)} commit(s) came back as {where} "
               f"({back.head[:12]}), {len(back.files)} file(s) changed:")
        for commit in back.commits:
            progress.say(out, f"  {commit.sha[:12]} {commit.subject} ({commit.author})")
        for change in back.files:
            moved = f"{change.old_path} -> " if change.old_path else ""
            progress.say(out, f"  {change.status} {moved}{change.path}")
        if checkout.snapshot:
            status(f"{where} also holds, below these, the uncommitted-changes commit "
                   f"{checkout.base[:12]} that --include-uncommitted made of your work tree")
    for note in back.notes:
        status(f"note: {in_cli_words(note)}")
