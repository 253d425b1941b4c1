"""Fan-out on every contract backend: isolated results, typed errors per sandbox, every sandbox
closed whatever happens (a failed job, fail_fast, stop, an outer cancel scope)."""

from __future__ import annotations

from functools import partial

import anyio
import pytest

from sandlot import CommandFailed, IsolatedSandboxProvider, Sandbox, fanout
from sandlot.fanout import FanoutEvent, Slot, Stage

pytestmark = pytest.mark.anyio


class Tracker:
    """Records every sandbox a job saw, so the test can check each one is closed after."""

    def __init__(self) -> None:
        self.sandboxes: list[Sandbox] = []
        self.events: list[FanoutEvent] = []

    def all_closed(self) -> bool:
        return all(sandbox.closed for sandbox in self.sandboxes)


async def test_each_sandbox_sees_only_its_own_work(provider: IsolatedSandboxProvider) -> None:
    tracker = Tracker()

    async def job(sandbox: Sandbox, slot: Slot) -> str:
        tracker.sandboxes.append(sandbox)
        await sandbox.exec(f"echo {slot.index} > mine.txt", check=True)
        listing = await sandbox.exec("cat mine.txt; ls", check=True)
        return listing.stdout

    report = await fanout.run(job, provider, n=4, max_parallel=4, on_event=tracker.events.append)
    assert report.ok, report.to_json()
    assert [v.split()[0] for v in report.values] == ["0", "1", "2", "3"]
    assert all(v.split()[1:] == ["mine.txt"] for v in report.values)
    assert len({o.sandbox for o in report.outcomes}) == 4
    assert all(o.closed and o.stage is Stage.DONE for o in report.outcomes)
    assert all(o.timings.create is not None and o.timings.job is not None for o in report.outcomes)
    assert tracker.all_closed()
    stages = [e.stage for e in tracker.events if e.slot.index == 0]
    assert stages == [Stage.CREATING, Stage.READY, Stage.RUNNING, Stage.CLOSING, Stage.DONE]


async def test_a_failing_job_fails_its_sandbox_only(provider: IsolatedSandboxProvider) -> None:
    tracker = Tracker()

    async def job(sandbox: Sandbox, slot: Slot) -> int:
        tracker.sandboxes.append(sandbox)
        result = await sandbox.exec(f"exit {slot.index}", check=slot.index == 1)
        return result.exit_code

    report = await fanout.run(job, provider, n=3, max_parallel=2)
    assert not report.ok
    assert [o.stage for o in report.outcomes] == [Stage.DONE, Stage.FAILED, Stage.DONE]
    assert isinstance(report.outcomes[1].error, CommandFailed)
    assert report.values[2] == 2
    assert tracker.all_closed() and all(o.closed for o in report.outcomes)
    assert report.to_json()["sandboxes"][1]["error"]["type"] == "CommandFailed"


async def test_fail_fast_cancels_the_others_and_closes_all(
    provider: IsolatedSandboxProvider,
) -> None:
    tracker = Tracker()

    async def job(sandbox: Sandbox, slot: Slot) -> None:
        tracker.sandboxes.append(sandbox)
        if slot.index == 0:
            raise RuntimeError("first one breaks")
        await sandbox.exec("sleep 60")

    with anyio.fail_after(120):
        report = await fanout.run(job, provider, n=3, max_parallel=3, fail_fast=True)
    assert report.cancelled and not report.ok
    assert report.outcomes[0].stage is Stage.FAILED
    assert {o.stage for o in report.outcomes[1:]} <= {Stage.CANCELLED}
    assert tracker.all_closed()
    assert not report.not_closed


async def test_stop_cancels_every_job_and_still_closes(provider: IsolatedSandboxProvider) -> None:
    tracker = Tracker()
    stop = anyio.Event()
    running = 0

    async def job(sandbox: Sandbox, slot: Slot) -> None:
        nonlocal running
        tracker.sandboxes.append(sandbox)
        running += 1
        if running == 2:
            stop.set()
        await sandbox.exec("sleep 60")

    with anyio.fail_after(120):
        report = await fanout.run(job, provider, n=2, max_parallel=2, stop=stop)
    assert report.cancelled
    assert [o.stage for o in report.outcomes] == [Stage.CANCELLED, Stage.CANCELLED]
    assert len(tracker.sandboxes) == 2 and tracker.all_closed()
    assert all(o.closed for o in report.outcomes)


async def test_an_outer_cancel_scope_closes_every_sandbox(
    provider: IsolatedSandboxProvider,
) -> None:
    tracker = Tracker()
    started = anyio.Event()

    async def job(sandbox: Sandbox, slot: Slot) -> None:
        tracker.sandboxes.append(sandbox)
        if len(tracker.sandboxes) == 2:
            started.set()
        await sandbox.exec("sleep 60")

    async with anyio.create_task_group() as group:
        group.start_soon(partial(fanout.run, job, provider, n=2, max_parallel=2))
        with anyio.fail_after(120):
            await started.wait()
        group.cancel_scope.cancel()
    assert len(tracker.sandboxes) == 2 and tracker.all_closed()
