"""A background command whose transport fails while nobody waits for it: the failure is
there for wait() and kill(), and never surfaces in the program's event loop as "Task
exception was never retrieved" (it did, in a later test of the same loop)."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from sandlot import ConnectionLostError
from sandlot.output import OutputCapture
from sandlot.sandbox import Process

pytestmark = pytest.mark.anyio


class _Lost:
    """A running command whose connection drops (what a backend's wait raises then)."""

    async def wait(self) -> int:
        raise ConnectionLostError("the connection dropped while a command was running")

    async def kill(self) -> None:
        return None


def _start() -> Process:
    return Process(_Lost(), OutputCapture(1024), OutputCapture(1024),  # type: ignore[arg-type]
                   command="serve", timeout=None, idle=None, on_done=lambda _p: None)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_an_unobserved_failure_is_not_reported_to_the_loop(anyio_backend: str) -> None:
    loop = asyncio.get_running_loop()
    reported: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    try:
        process = _start()
        await asyncio.sleep(0.01)
        assert process.done
        del process
        gc.collect()
        await asyncio.sleep(0)
    finally:
        loop.set_exception_handler(previous)
    assert reported == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_the_failure_is_still_the_callers_to_see(anyio_backend: str) -> None:
    process = _start()
    with pytest.raises(ConnectionLostError):
        await process.wait()
    with pytest.raises(ConnectionLostError):
        await process.kill()
