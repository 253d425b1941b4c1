"""The watched-process tools on every backend: watch_process starts (or attaches to) a
watched durable process, watch_process_events reads its events from a cursor."""

from __future__ import annotations

import anyio
import pytest

from sandlot.tools import ErrorResult, Toolbox

pytestmark = pytest.mark.anyio


async def test_watch_a_crash_by_cursor_and_attach(box: Toolbox) -> None:
    started = await box.watch_process(
        "echo up; sleep 1; echo 'ERROR: disk full'; echo \"thread 'main' panicked at "
        "src/main.rs:2:5:\"; exit 101", patterns=["^ERROR: "], workspace="primary")
    assert started.running and started.cursor == 0
    assert started.patterns[-1] == "^ERROR: " and "rust panic" in started.patterns
    cursor, seen = 0, []
    with anyio.fail_after(60):
        while True:
            got = await box.watch_process_events(started.process_id, cursor)
            seen += got.events
            cursor = got.cursor
            if got.ended:
                break
            await anyio.sleep(0.3)
    assert [(e.kind, e.pattern) for e in seen] == [
        ("match", "^ERROR: "), ("match", "rust panic"), ("exit", "")]
    assert seen[-1].exit_code == 101
    assert "[rust panic] thread 'main' panicked at src/main.rs:2:5:" in got.text or any(
        e.line.startswith("thread 'main' panicked") for e in seen)
    # Attached by id (as another toolbox would): its own pattern is still in effect.
    attached = await box.watch_process(process_id=started.process_id)
    assert attached.patterns == started.patterns and not attached.running
    again = await box.watch_process_events(started.process_id, seen[0].cursor)
    assert [e.kind for e in again.events] == ["match", "exit"]


async def test_bad_calls_are_tool_errors(box: Toolbox) -> None:
    both = await box.call("watch_process", {"command": "true", "process_id": "0" * 12})
    neither = await box.call("watch_process", {})
    bad = await box.call("watch_process", {"command": "true", "patterns": ["(x"],
                                           "workspace": "primary"})
    unknown = await box.call("watch_process_events", {"process_id": "0" * 12})
    for result in (both, neither, bad, unknown):
        assert isinstance(result, ErrorResult), result
    assert "not both and not neither" in both.text and "not both" in neither.text
    assert "not a valid regular expression" in bad.text
    assert "no durable process" in unknown.text
