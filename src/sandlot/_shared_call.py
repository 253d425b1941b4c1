"""One call shared by concurrent callers who all need a fresh answer (single flight).

N sandboxes created at once each poll `coder list`; one call answers them all, which matters on
a deployment that rate-limits its API. A caller must never get an answer older than its own
request (it may be polling for a change it just made), so a request that arrives while a call
is running waits for the next call, which starts when the running one ends and is shared by
every request that arrived meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class SharedCall(Generic[T]):
    """`await shared()` runs `call`, or joins a run that begins after the request."""

    def __init__(self, call: Callable[[], Awaitable[T]]) -> None:
        self._call = call
        self._running: asyncio.Task[T] | None = None  # its call has begun
        self._pending: asyncio.Task[T] | None = None  # its call begins after the running one

    async def __call__(self) -> T:
        loop = asyncio.get_running_loop()
        for task in (self._running, self._pending):
            if task is not None and task.get_loop() is not loop:  # left by a closed loop
                self._running = self._pending = None
        if self._pending is None:
            self._pending = asyncio.ensure_future(self._run(self._running))
            # Read the outcome even when every caller went away, so none is reported as lost.
            self._pending.add_done_callback(lambda done: done.cancelled() or done.exception())
        # A cancelled caller leaves the call to the others (it is not theirs to cancel).
        return await asyncio.shield(self._pending)

    async def _run(self, after: asyncio.Task[T] | None) -> T:
        if after is not None:
            await asyncio.wait([after])  # its outcome belongs to its own callers
        me = asyncio.current_task()
        # The call begins now: a request from here on needs a later call.
        if self._pending is me:
            self._pending = None
        self._running = me
        try:
            return await self._call()
        finally:
            if self._running is me:
                self._running = None
