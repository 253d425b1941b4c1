"""Fan-out over 8 containers on the private engine: each job sees only its own container, a
cancelled fan-out still removes every one (checked by the sandlot label)."""

from __future__ import annotations

import anyio
import pytest

from sandlot import Sandbox, fanout
from sandlot.fanout import Slot, Stage
from tests.backends.docker import busybox_provider, engine

pytestmark = pytest.mark.anyio


async def test_eight_containers_isolated_and_removed() -> None:
    eng = engine()
    before = set(eng.sandlot_containers())

    async def job(sandbox: Sandbox, slot: Slot) -> str:
        await sandbox.exec(f"echo {slot.index} > /tmp/mine", check=True)
        result = await sandbox.exec("cat /tmp/mine; hostname", check=True)
        return result.stdout

    report = await fanout.run(job, busybox_provider(), n=8, max_parallel=8, max_creating=4)
    assert report.ok, report.to_json()
    assert [value.split()[0] for value in report.values] == [str(i) for i in range(8)]
    assert len({value.split()[1] for value in report.values}) == 8  # 8 distinct containers
    assert set(eng.sandlot_containers()) == before


async def test_cancelled_fanout_removes_every_container() -> None:
    eng = engine()
    before = set(eng.sandlot_containers())
    stop = anyio.Event()
    running = 0

    async def job(sandbox: Sandbox, slot: Slot) -> None:
        nonlocal running
        running += 1
        if running == 8:
            stop.set()
        await sandbox.exec("sleep 300")

    with anyio.fail_after(300):
        report = await fanout.run(job, busybox_provider(), n=8, max_parallel=8, stop=stop)
    assert report.cancelled
    assert all(o.stage is Stage.CANCELLED and o.closed for o in report.outcomes)
    assert set(eng.sandlot_containers()) == before
