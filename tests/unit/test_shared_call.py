"""SharedCall: concurrent callers share one call, and nobody gets an answer older than its
request."""

from __future__ import annotations

import asyncio

import pytest

from sandlot._shared_call import SharedCall

pytestmark = pytest.mark.anyio


class _Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.fail = False

    async def __call__(self) -> int:
        self.calls += 1
        number = self.calls
        await self.release.wait()
        if self.fail:
            raise RuntimeError(f"call {number} failed")
        return number


async def test_callers_at_once_share_one_call() -> None:
    counter = _Counter()
    shared = SharedCall(counter)
    tasks = [asyncio.ensure_future(shared()) for _ in range(5)]
    await asyncio.sleep(0)
    counter.release.set()
    assert await asyncio.gather(*tasks) == [1, 1, 1, 1, 1]
    assert counter.calls == 1


async def test_a_request_during_a_call_gets_the_next_call() -> None:
    counter = _Counter()
    shared = SharedCall(counter)
    first = asyncio.ensure_future(shared())
    await asyncio.sleep(0.01)  # the first call is running now
    late = [asyncio.ensure_future(shared()) for _ in range(3)]
    await asyncio.sleep(0.01)
    counter.release.set()
    assert await first == 1
    assert await asyncio.gather(*late) == [2, 2, 2]  # one more call, shared by the late ones
    assert counter.calls == 2
    assert await shared() == 3  # nothing running: a call of its own


async def test_a_failure_reaches_every_caller_and_the_next_call_runs_afresh() -> None:
    counter = _Counter()
    counter.fail = True
    shared = SharedCall(counter)
    tasks = [asyncio.ensure_future(shared()) for _ in range(3)]
    counter.release.set()
    outcomes = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(o, RuntimeError) and str(o) == "call 1 failed" for o in outcomes)
    counter.fail = False
    assert await shared() == 2


async def test_a_cancelled_caller_does_not_cancel_the_others() -> None:
    counter = _Counter()
    shared = SharedCall(counter)
    leaving = asyncio.ensure_future(shared())
    staying = asyncio.ensure_future(shared())
    await asyncio.sleep(0.01)
    leaving.cancel()
    await asyncio.sleep(0.01)
    counter.release.set()
    assert await staying == 1
    assert leaving.cancelled()
