"""Run marks: how sandlot finds every process a command started, even ones that left its group.

A process group is easy to leave (`setsid`, a double fork, `setpgid`), so killing a command's
group does not end a daemon it spawned. The environment is inherited by every descendant
whatever its session or group, so each command runs with `SANDLOT_RUN=<sandbox mark>-<n>`;
ending a command (timeout, cancellation, `kill()`) also kills every process whose environment
holds that exact mark, and closing a sandbox every process holding the sandbox's mark. The
search repeats until a round finds nothing, so a process forking as fast as it can is caught
too. A process that replaces its own environment (`env -i`, `execve` with a fresh one) is not
found: see adr/0020.

Local sandboxes search the host's /proc here in Python; remote ones run `SWEEP_SCRIPT` (POSIX
sh with grep; busybox is enough) inside the sandbox.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import secrets
import signal
import time

#: The environment variable every command runs with.
RUN_ENV = "SANDLOT_RUN"

#: Rounds of search-and-kill before giving up (a round that finds nothing ends it at once).
ROUNDS = 50
_ROUND_PAUSE = 0.02

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


#: The kernel's flag for its own threads (`PF_KTHREAD`), which have no environment ever.
_PF_KTHREAD = 0x00200000
#: How long `host_pids` waits for a process in the middle of `execve` to show its environment.
_EXEC_SETTLE = 0.2
_EXEC_POLL = 0.002


def _read(pid: int, what: str) -> bytes | None:
    try:
        with open(f"/proc/{pid}/{what}", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return None


def _empty_environment(pid: int) -> str:
    """Why `pid`'s environment just read empty: "none" for a kernel thread, a zombie or a
    process gone; "empty" when the kernel's environment addresses are set and equal (stat
    fields 50 and 51), as for a process run with `env -i`, or for a moment in `execve`;
    "exec" otherwise, the rest of `execve`'s window. In that window the new memory is in place
    but the environment not yet written there, though the process has it (and its run mark)
    once the exec completes."""
    stat = _read(pid, "stat")
    if not stat:
        return "none"
    fields = stat.rsplit(b")", 1)[-1].split()
    if len(fields) < 49 or fields[0] in (b"Z", b"X"):
        return "none"
    try:
        if int(fields[6]) & _PF_KTHREAD:
            return "none"
        env_start, env_end = int(fields[47]), int(fields[48])
    except ValueError:
        return "none"
    return "empty" if env_end != 0 and env_start == env_end else "exec"


def host_pids(mark: str) -> list[int]:
    """Processes on this host whose environment holds `mark` (see `grep_pattern`).

    A process caught in the middle of `execve` shows an empty environment for a moment (in
    about 7% of scans of a process that execs in a loop); a sweep that took that for "not
    marked" left a daemon running as it exec'd. A process whose environment reads empty is
    read again until it shows, within `_EXEC_SETTLE`; one that reads empty twice with its
    environment's addresses equal really has none."""
    found: list[int] = []
    settling: dict[int, bool] = {}  # pid -> its environment looked empty for good once
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        environ = _read(int(name), "environ")
        if environ is None:
            continue
        if environ:
            if _matches(environ.split(b"\0"), mark):
                found.append(int(name))
            continue
        why = _empty_environment(int(name))
        if why != "none":
            settling[int(name)] = why == "empty"
    deadline = time.monotonic() + _EXEC_SETTLE
    while settling and time.monotonic() < deadline:
        time.sleep(_EXEC_POLL)
        again: dict[int, bool] = {}
        for pid, looked_empty in settling.items():
            environ = _read(pid, "environ")
            if environ is None:
                continue
            if environ:
                if _matches(environ.split(b"\0"), mark):
                    found.append(pid)
                continue
            why = _empty_environment(pid)
            if why == "none" or (why == "empty" and looked_empty):
                continue
            again[pid] = why == "empty"
        settling = again
    return found


async def host_sweep(mark: str) -> int:
    """SIGKILL every host process holding `mark` until none is left; how many were killed."""
    killed = 0
    for _ in range(ROUNDS):
        pids = host_pids(mark)
        if not pids:
            return killed
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except (ProcessLookupError, PermissionError):
                continue
        await asyncio.sleep(_ROUND_PAUSE)
    return killed


# $1 is `grep_pattern(mark)`. `grep -z` reads NUL-separated entries in one process per round;
# a grep without -z (old busybox) gets each environment through `tr`. The script skips itself;
# zombies have an empty environment and never match.
SWEEP_SCRIPT = r"""
pat=$1; me=$$; z=; quiet=
if printf 'x\000' | grep -qz x 2>/dev/null; then z=1; fi
# Whether a process is in the middle of execve: its environment reads empty until the kernel
# has written the new one (stat's env_end, field 51, still 0; see host_pids). Kernel threads,
# zombies and a process run with no environment at all (env_start = env_end, set) are not.
in_exec() {
  for e in $(grep -Ls . /proc/[0-9]*/environ 2>/dev/null); do
    p=${e#/proc/}; p=${p%/environ}
    read -r s < "/proc/$p/stat" 2>/dev/null || continue
    set -- ${s##*) }
    [ $# -ge 49 ] || continue
    case $1 in Z|X) continue;; esac
    [ $(( $7 & 2097152 )) -eq 0 ] || continue
    [ "${49}" != 0 ] && [ "${48}" = "${49}" ] && continue
    return 0
  done
  return 1
}
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
  # A round that finds nothing is trusted when no process is in an exec and the round after
  # a pause agrees (an exec's last step shows an empty environment with env_start = env_end).
  if [ -n "$live" ]; then quiet=; kill -KILL $live 2>/dev/null
  elif in_exec; then quiet=
  elif [ -n "$quiet" ]; then exit 0
  else quiet=1; fi
  sleep 0.02 2>/dev/null || sleep 1
done
exit 1
"""
