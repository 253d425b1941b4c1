"""`sandlot fanout`: one command in N fresh sandboxes at once, with live progress and a report.

Ctrl-C (or SIGTERM) once: every command is ended and every sandbox closed with its on_close,
then the summary and report are written as usual (exit 128 + the signal: 130 for Ctrl-C).
Ctrl-C again while that cleanup runs: the sandboxes not yet closed are listed with how to find
them later; cleanup goes on. A third Ctrl-C abandons the cleanup, after listing them once
more. This is the one policy of `sandlot._interrupts`, with the giving-up put off to the third
signal: the cleanup is what keeps many sandboxes from being left behind.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console

from .. import git, progress
from .._interrupts import Interrupts
from ..cli import add_provider_arguments, provider_from_args
from ..fanout import DEFAULT_MAX_PARALLEL, FanoutReport, Slot, run
from ..fanout.display import LiveView, leftovers, summary
from ..fanout.models import FanoutEvent, Stage
from ..git import host as git_host
from ..sandbox import ExecResult, Sandbox
from ..secrets import GLOBAL, EnvValue, secrets_from_specs

#: Bytes of each stream's tail kept per sandbox for the report.
REPORT_TAIL = 4096
#: Seconds an interrupted sandbox spends bringing its commits back before it is closed anyway.
RESCUE_BOUND = 120.0


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "fanout",
        help="run a command in N sandboxes at once",
        description="Create N sandboxes from one provider configuration, run the same "
        "command in each (optionally after copying a directory in), show live progress, then "
        "a summary. Each sandbox is closed with its on_close whatever happens. The command "
        "sees SANDLOT_FANOUT_INDEX (0..N-1) and SANDLOT_FANOUT_LABEL. Exit status: 0 when "
        "every sandbox succeeded, 1 when any failed, 128 + the signal when interrupted (130 for "
        "Ctrl-C).",
        epilog="examples:\n"
        "  sandlot fanout -n 4 -- 'echo try $SANDLOT_FANOUT_INDEX'\n"
        "  sandlot fanout -n 8 --max-parallel 4 --report out.json \\\n"
        "      --provider-config '{\"type\": \"docker\", \"image\": \"python:3.12\", "
        "\"on_close\": \"delete\"}' \\\n"
        "      --copy-in . -- python -m pytest -q\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_provider_arguments(parser)
    parser.add_argument("-n", type=int, required=True, help="how many sandboxes")
    parser.add_argument(
        "--max-parallel", type=int, default=DEFAULT_MAX_PARALLEL,
        help=f"sandboxes alive at once (default {DEFAULT_MAX_PARALLEL})",
    )  # fmt: skip
    parser.add_argument(
        "--max-creating", type=int,
        help="sandboxes being created at once (default: --max-parallel)",
    )  # fmt: skip
    parser.add_argument("--fail-fast", action="store_true", help="stop all once one fails")
    parser.add_argument(
        "--copy-in", metavar="DIR", help="host directory copied into each worktree first"
    )
    parser.add_argument(
        "--repo", metavar="PATH",
        help="git repository put into each sandbox (its HEAD); each sandbox's commits come back "
        "as its own branch, --branch-prefix + index",
    )  # fmt: skip
    parser.add_argument(
        "--branch-prefix",
        help="with --repo: branch names are this plus the sandbox index (default "
        "sandlot/try-<UTC time>-, so every run gets new branches)",
    )  # fmt: skip
    parser.add_argument("--force", action="store_true",
                        help="with --repo: move branches that exist already")
    parser.add_argument(
        "--commit-uncommitted", metavar="MESSAGE",
        help="with --repo: commit what the command left uncommitted, with this message",
    )  # fmt: skip
    parser.add_argument(
        "--env", metavar="KEY=VALUE", action="append", default=[], help="extra environment"
    )
    parser.add_argument(
        "--secret", metavar="NAME[=ENVVAR|=@FILE]", action="append", default=[],
        help="pass a secret to every command as $NAME, its value from the host variable ENVVAR "
        "(default NAME) or a file, never from argv; output, tables and the report show "
        "[secret:NAME] instead (repeatable)",
    )
    parser.add_argument("--timeout", type=float, help="seconds before each command is ended")
    parser.add_argument("--report", metavar="PATH", help="write the JSON report here")
    parser.add_argument("-q", "--quiet", action="store_true", help="only the summary")
    parser.add_argument("cmd", nargs=argparse.REMAINDER, help="-- followed by the command")
    parser.set_defaults(handler=run_command, own_signals=True)


def _usage_error(message: str) -> int:
    print(f"sandlot fanout: {message}", file=sys.stderr)
    return 2


async def run_command(args: argparse.Namespace) -> int:
    cmd = list(args.cmd)
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        return _usage_error("no command given; usage: sandlot fanout -n N [options] -- CMD")
    if args.n < 1:
        return _usage_error(f"-n must be at least 1, got {args.n}")
    if args.copy_in and not Path(args.copy_in).is_dir():
        return _usage_error(f"--copy-in {args.copy_in!r} is not a directory")
    if args.repo and args.copy_in:
        return _usage_error("--repo and --copy-in both fill the worktree; give one of them")
    if args.repo:
        if args.branch_prefix is None:  # a fresh name per run: the same command works again
            args.branch_prefix = await _fresh_prefix(args.repo, args.n)
        # Every branch is checked (valid, free unless --force, not checked out) before any
        # sandbox exists.
        for index in range(args.n):
            await git.roundtrip.check_target(args.repo, f"{args.branch_prefix}{index}",
                                             force=args.force)
    env: dict[str, EnvValue] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep:
            return _usage_error(f"--env needs KEY=VALUE, got {item!r}")
        env[key] = value
    env.update(secrets_from_specs(args.secret, "--secret"))
    provider = provider_from_args(args)
    command: str | list[str] = cmd[0] if len(cmd) == 1 else cmd
    results: dict[int, ExecResult] = {}
    branches: dict[int, dict[str, Any]] = {}

    async def job(sandbox: Sandbox, slot: Slot) -> int:
        cwd = None
        if args.copy_in:
            await sandbox.copy_in(args.copy_in, sandbox.worktree)
        if args.repo:
            cwd = (await git.push_in(sandbox, repo=args.repo)).path

        async def bring_back() -> None:
            # rescue: a branch taken meanwhile never costs the commits (a rescue ref instead).
            back = await git.pull_out(sandbox, repo=args.repo,
                                      branch=f"{args.branch_prefix}{slot.index}",
                                      commit_uncommitted=args.commit_uncommitted,
                                      force=args.force, rescue=True)
            branches[slot.index] = {
                "branch": back.branch, "head": back.head, "rescue_ref": back.rescue_ref,
                "commits": [c.subject for c in back.commits],
                "files": len(back.files), "uncommitted": back.uncommitted,
            }

        pulled = False
        try:
            result = await sandbox.exec(
                command,
                cwd=cwd,
                env={**env, "SANDLOT_FANOUT_INDEX": str(slot.index),
                     "SANDLOT_FANOUT_LABEL": slot.label},
                timeout=args.timeout,
                max_output=REPORT_TAIL,
                scrub=True,
            )
            results[slot.index] = result
            if args.repo:  # the work comes back whether or not the command succeeded
                pulled = True
                await bring_back()
        except BaseException as exc:
            # Interrupted (Ctrl-C, --fail-fast) or failed: the commits still come back before
            # the sandbox is closed, within a bound; a pull that itself failed is not retried.
            cancelled = isinstance(exc, anyio.get_cancelled_exc_class())
            if args.repo and slot.index not in branches and (cancelled or not pulled):
                with anyio.CancelScope(shield=True) as scope, \
                        contextlib.suppress(Exception):
                    scope.deadline = anyio.current_time() + RESCUE_BOUND
                    await bring_back()
            raise
        result.check()
        return result.exit_code

    console = progress.console()
    slots = [Slot(i, f"{provider.name}-{i}") for i in range(args.n)]
    stop = anyio.Event()
    interrupts = _Interrupts(stop, console)
    with LiveView(slots, console, quiet=args.quiet) as view, interrupts.installed():
        report = await run(
            job,
            provider,
            n=args.n,
            max_parallel=args.max_parallel,
            max_creating=args.max_creating,
            fail_fast=args.fail_fast,
            on_event=_chain(view.on_event, interrupts.on_event),
            stop=stop,
        )
    extra = {index: _result_json(result) for index, result in results.items()}
    for index, came_back in branches.items():
        extra.setdefault(index, {})["git"] = came_back
    console.print(summary(report, extra))
    for index, came_back in sorted(branches.items()):
        count = len(came_back["commits"])
        what = (f"branch {came_back['branch']}: {count} commit(s)" if came_back["branch"]
                else f"{came_back['rescue_ref']}: {count} commit(s) (the branch was taken; "
                f"recover with `git branch NAME {came_back['rescue_ref']}`)"
                if came_back["rescue_ref"] else "no new commits")
        progress.say(console, f"sandlot: [{index}] {what}")
    if args.report:
        _write_report(Path(args.report), report, extra)
        console.print(f"report: {args.report}", markup=False, highlight=False)
    left = leftovers(report.outcomes)
    if left:
        console.print("these sandboxes may be left behind:\n" + "\n".join(left), markup=False)
    if interrupts.exit_code is not None:
        return interrupts.exit_code
    return 0 if report.ok else 1


async def _fresh_prefix(repo: str, n: int) -> str:
    """`sandlot/try-<UTC time>-` (`-2`, `-3`, ... after the time when a run of the same second
    took it), so that running the same fan-out again makes new branches."""
    stamp = time.strftime("sandlot/try-%Y%m%dT%H%M%SZ", time.gmtime())
    root = await git_host.toplevel(repo)
    for attempt in range(1, 100):
        prefix = f"{stamp}-" if attempt == 1 else f"{stamp}-{attempt}-"
        if not any([await git_host.branch_exists(root, f"{prefix}{i}") for i in range(n)]):
            return prefix
    return f"{stamp}-{os.getpid()}-"


def _chain(*callbacks: Any) -> Any:
    def both(event: Any) -> None:
        for callback in callbacks:
            callback(event)

    return both


def _result_json(result: ExecResult) -> dict[str, Any]:
    return {
        "exit_code": result.exit_code,
        "timed_out": result.timed_out,
        "duration": result.duration,
        "stdout_tail": result.stdout,
        "stderr_tail": result.stderr,
    }


def _write_report(path: Path, report: FanoutReport, extra: dict[int, dict[str, Any]]) -> None:
    data = report.to_json()
    for entry in data["sandboxes"]:
        info = dict(extra.get(entry["index"]) or {})
        entry["git"] = info.pop("git", None)
        entry["command"] = info or None
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(GLOBAL.scrubber.value(data), indent=2) + "\n")
    tmp.replace(path)  # never a half-written report


class _Interrupts:
    """SIGINT/SIGTERM while a fan-out runs: stop, then warn, then abandon (module docstring)."""

    def __init__(self, stop: anyio.Event, console: Console) -> None:
        self.stop = stop
        self.console = console
        self.signals = Interrupts(self.first, self.again)
        self._sandboxes: dict[int, tuple[str, str | None, bool]] = {}

    def on_event(self, event: FanoutEvent) -> None:
        if event.sandbox is not None:
            closed = event.stage in (Stage.DONE, Stage.FAILED, Stage.CANCELLED)
            self._sandboxes[event.slot.index] = (event.slot.label, event.sandbox, closed)

    def pending(self) -> list[str]:
        return [
            f"  [{index}] {label}: {sandbox}"
            for index, (label, sandbox, closed) in sorted(self._sandboxes.items())
            if not closed
        ]

    @property
    def exit_code(self) -> int | None:
        return self.signals.exit_code

    def first(self, _signum: int) -> None:
        self.console.print(
            "sandlot: interrupted; ending every command and closing every sandbox "
            "(Ctrl-C again lists what is still open)", markup=False, highlight=False,
        )
        self.stop.set()

    def again(self, _signum: int, count: int) -> None:
        pending = self.pending()
        listing = "\n".join(pending) if pending else "  (none: every sandbox is closed)"
        hint = ("find leftovers later with `sandlot gc --dry-run` (docker) or `coder list` "
                "(coder)")
        if count == 2:
            self.console.print(
                f"sandlot: still closing these sandboxes:\n{listing}\n{hint}; cleanup goes on "
                "(Ctrl-C once more abandons it, and these may be left)",
                markup=False, highlight=False,
            )
            return
        self.console.print(
            f"sandlot: cleanup abandoned; these sandboxes may be left:\n{listing}\n{hint}",
            markup=False, highlight=False,
        )
        sys.stderr.flush()
        os._exit(self.exit_code or 130)

    def installed(self) -> Interrupts:
        return self.signals
