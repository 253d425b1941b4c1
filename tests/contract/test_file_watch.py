"""File watch (adr/0052) on every backend: 1,000 files created, renamed and deleted by one
command, each file's events seen in order (or an overflow event said so); the polling
fallback; nothing left running after the watch closes, or after its sandbox does."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import anyio
import pytest

from sandlot import Sandbox
from sandlot.errors import SandboxClosed
from sandlot.fswatch import FileEvent, FileWatch
from tests.helpers import eventually

pytestmark = pytest.mark.anyio

#: Each file's life, in the order the command gives it: as inotify tells it, and as polling
#: sees it (states a listing can see: the write is part of the creation).
_LIFE = {"inotify": ["created", "modified", "moved", "deleted"],
         "poll": ["created", "moved", "deleted"]}
#: The phases apart by more than a poll interval, so a polling watcher sees each state.
_CHURN = (
    "i=0; while [ $i -lt 1000 ]; do echo x > f$i; i=$((i+1)); done; sleep 1.5; "
    "i=0; while [ $i -lt 1000 ]; do mv f$i g$i; i=$((i+1)); done; sleep 1.5; "
    "i=0; while [ $i -lt 1000 ]; do rm g$i; i=$((i+1)); done"
)
#: Counts the watchers of directory $1 by the name they run under (the [h] keeps grep from
#: finding itself) and the directory in their arguments: another test's watcher, on the other
#: worker or another sandbox of this host, is not this test's.
_AGENTS = r"""n=0
for f in $(grep -l "sandlot-fswatc[h]" /proc/[0-9]*/cmdline 2>/dev/null); do
  tr '\000' '\n' < "$f" 2>/dev/null | grep -qxF -- "$1" && n=$((n + 1))
done
echo "$n"
"""


async def _collect(watch: FileWatch, until: int, seconds: float = 120,
                   prefix: str = "g") -> list[FileEvent]:
    """Events until `until` deletions of files named `prefix`... were seen (or an overflow,
    or the time is up)."""
    got: list[FileEvent] = []
    with anyio.move_on_after(seconds):
        async for event in watch:
            got.append(event)
            deleted = sum(e.kind == "deleted" and e.path.startswith(prefix) for e in got)
            if event.kind == "overflow" or deleted >= until:
                break
    return got


async def _agents(sandbox: Sandbox, backend: ModuleType, path: str) -> int:
    """Running watchers of `path`: seen from a command in the sandbox, or (bubblewrap: a PID
    namespace per command) from this host, where the sandbox's processes are."""
    if backend.SHARED_PIDS:
        found = await sandbox.exec(["sh", "-c", _AGENTS, "sh", path])
        return int(found.stdout.strip() or 0)
    count = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            raw = cmdline.read_bytes()
        except OSError:
            continue
        count += b"sandlot-fswatch" in raw and path.encode() in raw.split(b"\0")
    return count


async def test_a_thousand_files_each_in_order(sandbox: Sandbox, workdir: str,
                                             backend: ModuleType) -> None:
    assert await _agents(sandbox, backend, workdir) == 0, "a watcher of this directory runs"
    async with sandbox.watch(workdir) as watch:
        # inotify where python3 is (every backend but the busybox container: polling there)
        assert watch.source in ("inotify", "poll")
        assert await _agents(sandbox, backend, workdir) >= 1
        await sandbox.exec(_CHURN, cwd=workdir, check=True)
        events = await _collect(watch, 1000)
    # Closed with its block: the watcher is gone.
    async def gone() -> bool:
        return await _agents(sandbox, backend, workdir) == 0

    await eventually(gone, what="the watcher's end")
    assert events, "no event at all"
    if any(e.kind == "overflow" for e in events):
        return  # said, not silent: the test's point holds
    per_file: dict[str, list[str]] = {}
    for event in events:
        name = event.path[1:] if event.path[:1] in ("f", "g") else event.path
        per_file.setdefault(name, []).append(event.kind)
        assert event.source == watch.source
    assert len(per_file) == 1000
    for name, kinds in per_file.items():
        if watch.source == "poll":
            # A listing may catch a file between its creation and its write (then the write
            # is a `modified` of its own), or amid a rename (then the rename is the old name
            # deleted and the new one created): states, still in order.
            kinds = [k for i, k in enumerate(kinds) if not (k == "modified" and i == 1)]
            assert kinds in (_LIFE["poll"], ["created", "deleted", "created", "deleted"]), (
                name, kinds)
            continue
        assert kinds == _LIFE[watch.source], (name, kinds)
    if watch.source == "poll":
        return  # a rename seen as a deletion and a creation is no `moved`
    moves = {(e.path, e.dest) for e in events if e.kind == "moved"}
    assert moves == {(f"f{i}", f"g{i}") for i in range(1000)}


async def test_a_full_queue_ends_in_an_overflow_event(sandbox: Sandbox, workdir: str) -> None:
    async with sandbox.watch(workdir, queue_size=10) as watch:
        await sandbox.exec(_CHURN, cwd=workdir, check=True)
        await anyio.sleep(2)  # the consumer is late: the queue fills up
        events = await _collect(watch, 1000, seconds=20)
    kinds = [e.kind for e in events]
    assert "overflow" in kinds
    overflow = events[kinds.index("overflow")]
    assert kinds.index("overflow") == 10 and overflow.dropped > 0


async def test_the_polling_fallback_says_so(sandbox: Sandbox, workdir: str) -> None:
    async with sandbox.watch(workdir, force_poll=True, poll_interval=0.2) as watch:
        assert watch.source == "poll"
        for step in ("echo x > a", "mv a b", "rm b"):
            await sandbox.exec(step, cwd=workdir, check=True)
            await anyio.sleep(1)
        events = await _collect(watch, 1, seconds=20, prefix="b")
    assert [(e.kind, e.path, e.dest, e.source) for e in events] == [
        ("created", "a", "", "poll"), ("moved", "a", "b", "poll"), ("deleted", "b", "", "poll")]


async def test_closing_the_sandbox_ends_the_watch(fresh_sandbox: Sandbox) -> None:
    watch = await fresh_sandbox.watch(".").start()
    await fresh_sandbox.close()
    with anyio.fail_after(30):
        assert [e async for e in watch] == []
    with pytest.raises(SandboxClosed):
        await fresh_sandbox.watch(".").start()
