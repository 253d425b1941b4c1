"""Which processes carry a run mark, read from /proc: one reading of each process's
environment, and a process caught inside `execve` waited out instead of passed over.

Standard library only and free of sandlot imports: the host's sweep (`_run_marks`) imports it,
and the sandbox sweep runs this file's source with the sandbox's own python3 when it has one
(`python3 -c SOURCE PATTERN`; exit 0 when nothing marked is left, 3 when rounds ran out).

Inside `execve` the kernel swaps in the new memory before it writes the arguments and the
environment there, so /proc shows the environment empty for a moment (in about 7% of scans of
a process that execs in a loop), though the process keeps it, run mark included, once the
exec completes. A search that took that for "not marked" let a daemon that was exec'ing
survive its sweep.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable

#: The kernel's flag for its own threads (`PF_KTHREAD`), which never have an environment.
PF_KTHREAD = 0x00200000
#: How long a search waits for a process inside `execve` to show its environment.
SETTLE = 0.2
POLL = 0.002
#: Rounds of search-and-kill before a sweep gives up (a round that finds nothing ends it).
ROUNDS = 50
ROUND_PAUSE = 0.02

Matcher = Callable[[list[bytes]], bool]


def read(pid: int, what: str) -> bytes | None:
    try:
        with open(f"/proc/{pid}/{what}", "rb") as handle:
            return handle.read()
    except OSError:  # gone, or not ours to read
        return None


def why_empty(pid: int) -> str:
    """Why `pid`'s environment just read empty: "none" for a kernel thread, a zombie or a
    process gone; "empty" when the environment's start and end addresses (stat fields 50 and
    51) are set and equal, as for a process run with `env -i` or for a moment of `execve`;
    "exec" otherwise: the rest of `execve`'s window."""
    stat = read(pid, "stat")
    if not stat:
        return "none"
    fields = stat.rsplit(b")", 1)[-1].split()
    if len(fields) < 49 or fields[0] in (b"Z", b"X"):
        return "none"
    try:
        if int(fields[6]) & PF_KTHREAD:
            return "none"
        env_start, env_end = int(fields[47]), int(fields[48])
    except ValueError:
        return "none"
    return "empty" if env_end != 0 and env_start == env_end else "exec"


def marked(matches: Matcher, skip: int) -> list[int]:
    """Processes (other than `skip`) whose environment entries satisfy `matches`. One whose
    environment reads empty is read again until it shows, within `SETTLE`; one that reads
    empty twice with its environment's addresses equal really has none."""
    found: list[int] = []
    settling: dict[int, bool] = {}  # pid -> its environment looked empty for good once
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == skip:
            continue
        environ = read(int(name), "environ")
        if environ is None:
            continue
        if environ:
            if matches(environ.split(b"\0")):
                found.append(int(name))
            continue
        why = why_empty(int(name))
        if why != "none":
            settling[int(name)] = why == "empty"
    deadline = time.monotonic() + SETTLE
    while settling and time.monotonic() < deadline:
        time.sleep(POLL)
        again: dict[int, bool] = {}
        for pid, looked_empty in settling.items():
            environ = read(pid, "environ")
            if environ is None:
                continue
            if environ:
                if matches(environ.split(b"\0")):
                    found.append(pid)
                continue
            why = why_empty(pid)
            if why == "none" or (why == "empty" and looked_empty):
                continue
            again[pid] = why == "empty"
        settling = again
    return found


def kill_all(pids: list[int], matches: Matcher) -> int:
    """SIGKILL each of `pids` that still carries the mark. Its environment is read again just
    before the kill: `marked` may have found it up to `SETTLE` earlier, and a pid freed since
    can belong to any process of the machine by now (a container's, seen from the host). One
    that reads empty now (inside `execve`) is left to the sweep's next round."""
    killed = 0
    for pid in pids:
        environ = read(pid, "environ")
        if not environ or not matches(environ.split(b"\0")):
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except (ProcessLookupError, PermissionError):
            continue
    return killed


def main(argv: list[str]) -> int:
    """The sandbox sweep: SIGKILL every process with an environment entry matching the
    extended regex argv[1] (`_run_marks.grep_pattern`) until none is left."""
    pattern = re.compile(argv[1].encode())

    def matches(entries: list[bytes]) -> bool:
        return any(pattern.search(entry) for entry in entries)

    for _ in range(ROUNDS):
        pids = marked(matches, os.getpid())
        if not pids:
            return 0
        kill_all(pids, matches)
        time.sleep(ROUND_PAUSE)
    return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
