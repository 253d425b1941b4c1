"""Watched processes (adr/0051): a durable process's crash lines, exit and idle kill as events,
on every backend, resumed by cursor after a dropped connection from another program."""

from __future__ import annotations

from types import ModuleType

import anyio
import pytest

from sandlot import ConfigurationError, Sandbox
from sandlot.processes import DurableProcess, ProcessEvent
from tests.helpers import drop_connection

pytestmark = pytest.mark.anyio

_PANIC = ("echo starting; sleep 2; echo 'panic: runtime error: index out of range [3]'; "
          "echo; echo 'goroutine 1 [running]:'; exit 2")
_TRACEBACK = ("echo 'Traceback (most recent call last):'; echo '  File \"app.py\", line 3'; "
              "echo 'ValueError: bad'; i=0; while [ $i -lt 600 ]; do echo alive $i; "
              "i=$((i+1)); sleep 0.2; done")


async def _events(process: DurableProcess, since: int = 0, *, until: str = "",
                  seconds: float = 60) -> list[ProcessEvent]:
    """Events from `since` until one of kind `until` (or the stream's end)."""
    got: list[ProcessEvent] = []
    with anyio.fail_after(seconds):
        async for event in process.events(since, poll=0.1):
            got.append(event)
            if event.kind == until:
                break
    return got


async def test_a_panic_after_two_seconds_then_the_exit(sandbox: Sandbox) -> None:
    process = await sandbox.processes.start(_PANIC)
    events = await _events(process)
    assert [(e.kind, e.pattern, e.line) for e in events] == [
        ("match", "go panic", "panic: runtime error: index out of range [3]"),
        ("exit", "", ""),
    ]
    assert events[-1].exit_code == 2
    info = await process.info()
    assert events[-1].cursor == info.output_bytes
    # The match's cursor is just after its line: reading from it shows what followed.
    after = await process.read(events[0].cursor)
    assert after.text == "\ngoroutine 1 [running]:\n"
    await process.remove()


async def test_a_traceback_while_it_keeps_running(sandbox: Sandbox) -> None:
    process = await sandbox.processes.start(_TRACEBACK)
    (event,) = await _events(process, until="match")
    assert (event.kind, event.pattern, event.line) == (
        "match", "python traceback", "Traceback (most recent call last):")
    assert (await process.info()).running
    more, cursor, over = await process.poll_events(event.cursor)
    assert more == [] and not over and cursor >= event.cursor
    await process.kill()
    events = await _events(process, cursor)
    assert [e.kind for e in events] == ["exit"]
    assert events[0].exit_code == 137
    await process.remove()


async def test_a_silent_process_is_idle_killed(sandbox: Sandbox) -> None:
    process = await sandbox.processes.start("echo ready; sleep 600", idle_kill=1)
    events = await _events(process)
    assert [e.kind for e in events] == ["idle_kill"]
    assert (await process.info()).ended_by == "idle_timeout"
    await process.remove()


async def test_its_own_patterns_are_kept_for_a_reattached_reader(
    backend: ModuleType, fresh_sandbox: Sandbox
) -> None:
    process = await fresh_sandbox.processes.start(
        "echo 'listening on :8080'; sleep 2; echo 'ERROR db gone'; sleep 1; "
        "echo 'panic: db'; sleep 600", watch=[r"^ERROR ", r"listening on :\d+"])
    (ready,) = await _events(process, until="match")
    assert (ready.pattern, ready.line) == (r"listening on :\d+", "listening on :8080")
    await drop_connection(fresh_sandbox)
    # Another program picks the process up by id and resumes from the cursor it was given.
    async with backend.attach(fresh_sandbox).session() as other:
        again = await other.processes.get(process.id)
        events = await _events(again, ready.cursor, until="match")
        assert [(e.pattern, e.line) for e in events] == [(r"^ERROR ", "ERROR db gone")]
        rest = await _events(again, events[-1].cursor, until="match")
        assert [(e.pattern, e.line) for e in rest] == [("go panic", "panic: db")]
        await again.kill()
        tail = await _events(again, rest[-1].cursor)
        assert [e.kind for e in tail] == ["exit"]
    await process.remove()


async def test_the_stream_resumes_after_a_dropped_connection(
    backend: ModuleType, fresh_sandbox: Sandbox
) -> None:
    process = await fresh_sandbox.processes.start(_PANIC)
    (started,) = [e for e in await _events(process, until="match") if e.kind == "match"]
    await drop_connection(fresh_sandbox)
    # The same program: its next call reconnects; the events after the cursor, exactly once.
    rest = await _events(process, started.cursor)
    assert [e.kind for e in rest] == ["exit"] and rest[0].exit_code == 2
    await process.remove()


async def test_bad_watch_input_is_refused_before_anything_starts(sandbox: Sandbox) -> None:
    before = len(await sandbox.processes.list())
    with pytest.raises(ConfigurationError, match="not a valid regular expression"):
        await sandbox.processes.start("true", watch=["(unclosed"])
    with pytest.raises(ConfigurationError, match="a list of regular expressions"):
        await sandbox.processes.start("true", watch="panic")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="idle_kill or idle_timeout, not both"):
        await sandbox.processes.start("true", idle_kill=1, idle_timeout=1)
    assert len(await sandbox.processes.list()) == before
