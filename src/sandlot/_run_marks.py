"""Run marks: how sandlot finds every process a command started, even ones that left its group.

A process group is easy to leave (`setsid`, a double fork, `setpgid`), so killing a command's
group does not end a daemon it spawned. The environment is inherited by every descendant
whatever its session or group, so each command runs with `SANDLOT_RUN=<sandbox mark>-<n>`;
ending a command (timeout, cancellation, `kill()`) also kills every process whose environment
holds that exact mark, and closing a sandbox every process holding the sandbox's mark. The
search repeats until a round finds nothing, so a process forking as fast as it can is caught
too. A process that replaces its own environment (`env -i`, `execve` with a fresh one) is not
found: see adr/0020.

Local sandboxes search the host's /proc here in Python (`_proc_scan`); remote ones run
`sweep_argv`: the same search with the sandbox's python3, or `SWEEP_SCRIPT` in POSIX sh with
grep (busybox is enough) where it has none.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
from pathlib import Path

from . import _proc_scan

#: The environment variable every command runs with.
RUN_ENV = "SANDLOT_RUN"

#: Rounds of search-and-kill before giving up (a round that finds nothing ends it at once):
#: the same bounds as the sandbox sweep's.
ROUNDS = _proc_scan.ROUNDS

_MARK = re.compile(r"[0-9a-f]{12}(?:-[0-9]+)?\Z")


def new_sandbox_mark() -> str:
    """A random mark for one sandbox; command marks are `<it>-<n>`."""
    return secrets.token_hex(6)


def durable_mark(provider: str, name: str, worktree: str) -> str:
    """The mark of a sandbox's durable processes (each runs with `<it>-<n>` of its own): the
    same in every program attached to that sandbox, and unlike any sandbox mark, so closing a
    sandbox that stays does not end them."""
    return hashlib.sha256(f"{provider}\0{name}\0{worktree}".encode()).hexdigest()[:12]


def command_mark(sandbox_mark: str, number: int) -> str:
    return f"{sandbox_mark}-{number}"


def grep_pattern(mark: str) -> str:
    """The extended regex matching the environment entry of `mark`: a command mark matches
    exactly, a bare sandbox mark matches every command of that sandbox."""
    if not _MARK.match(mark):
        raise ValueError(f"not a run mark: {mark!r}")
    suffix = "" if "-" in mark else "-[0-9]+"
    return f"^{RUN_ENV}={mark}{suffix}$"


def _matches(entries: list[bytes], mark: str) -> bool:
    wanted = f"{RUN_ENV}={mark}".encode()
    if "-" in mark:
        return wanted in entries
    prefix = wanted + b"-"
    return any(entry.startswith(prefix) for entry in entries)


def _matcher(mark: str) -> _proc_scan.Matcher:
    return lambda entries: _matches(entries, mark)


def host_pids(mark: str) -> list[int]:
    """Processes on this host whose environment holds `mark` (see `grep_pattern`), a process
    inside `execve` included (`_proc_scan.marked`)."""
    return _proc_scan.marked(_matcher(mark), os.getpid())


async def host_sweep(mark: str) -> int:
    """SIGKILL every host process holding `mark` until none is left; how many were killed."""
    matches = _matcher(mark)
    killed = 0
    for _ in range(ROUNDS):
        pids = _proc_scan.marked(matches, os.getpid())
        if not pids:
            return killed
        killed += _proc_scan.kill_all(pids, matches)
        await asyncio.sleep(_proc_scan.ROUND_PAUSE)
    return killed


# $1 is `grep_pattern(mark)`; $2, when given, is `_proc_scan`'s source: with python3 in the
# sandbox it does the sweep, reading each environment once and waiting out a process inside
# execve. Without python3 (or where it fails to run: exit codes other than 0 and 3) sh does
# it: `grep -z` reads NUL-separated entries in one process per round; a grep without -z (old
# busybox) gets each environment through `tr`. The script skips itself; zombies have an empty
# environment and never match. sh cannot read each environment once for both questions (is
# it marked, is it empty), so a process inside execve may hide from one round: an empty round
# is trusted when the round after a pause agrees.
SWEEP_SCRIPT = r"""
pat=$1; me=$$; z=; quiet=
if [ -n "$2" ] && command -v python3 >/dev/null 2>&1; then
  python3 -c "$2" "$pat"; rc=$?
  case $rc in 0|3) exit $(( rc / 3 ));; esac
fi
if printf 'x\000' | grep -qz x 2>/dev/null; then z=1; fi
n=0
while [ "$n" -lt 50 ]; do
  n=$((n + 1)); pids=
  if [ -n "$z" ]; then
    for e in $(grep -lszE "$pat" /proc/[0-9]*/environ 2>/dev/null); do
      p=${e#/proc/}; pids="$pids ${p%/environ}"
    done
  else
    for e in /proc/[0-9]*/environ; do
      tr '\000' '\n' < "$e" 2>/dev/null | grep -qE "$pat" || continue
      p=${e#/proc/}; pids="$pids ${p%/environ}"
    done
  fi
  live=
  for p in $pids; do [ "$p" = "$me" ] || live="$live $p"; done
  if [ -z "$live" ]; then [ -n "$quiet" ] && exit 0; quiet=1
  else quiet=; kill -KILL $live 2>/dev/null; fi
  sleep 0.02 2>/dev/null || sleep 1
done
exit 1
"""


def sweep_argv(mark: str) -> list[str]:
    """The command that ends every process holding `mark` inside a sandbox: exit 0 once none
    is left, 1 when it gave up."""
    return ["sh", "-c", SWEEP_SCRIPT, "sh", grep_pattern(mark), _SCAN_SOURCE]


_SCAN_SOURCE = Path(_proc_scan.__file__).read_text(encoding="utf-8")

