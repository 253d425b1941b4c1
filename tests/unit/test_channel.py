"""sandlot._channel.Channel: what the session helper's and the language servers' streams rely
on (order, the bound, either end closing, a wait with a limit, a cancelled wait)."""

from __future__ import annotations

import anyio
import pytest

from sandlot._channel import Channel

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_items_come_in_order_and_the_bound_holds_the_producer() -> None:
    channel: Channel[int] = Channel(2)
    sent: list[int] = []

    async def produce() -> None:
        for i in range(5):
            await channel.send(i)
            sent.append(i)
        channel.end()

    async with anyio.create_task_group() as group:
        group.start_soon(produce)
        await anyio.sleep(0.05)
        assert sent == [0, 1]  # two wait; the third send waits for room
        got = [item async for item in channel.drain()]
    assert got == [0, 1, 2, 3, 4]


async def test_end_gives_what_is_left_then_end_of_stream() -> None:
    channel: Channel[str] = Channel(4)
    channel.send_nowait("a")
    channel.end()
    assert await channel.receive() == "a"
    with pytest.raises(anyio.EndOfStream):
        await channel.receive()
    with pytest.raises(anyio.ClosedResourceError):
        channel.send_nowait("b")


async def test_a_dropped_channel_refuses_sends_and_frees_a_waiting_producer() -> None:
    channel: Channel[int] = Channel(1)
    channel.send_nowait(1)
    with pytest.raises(anyio.WouldBlock):
        channel.send_nowait(2)
    outcome: list[BaseException] = []

    async def blocked() -> None:
        try:
            await channel.send(2)
        except anyio.ClosedResourceError as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(blocked)
        await anyio.sleep(0.02)
        channel.drop()
    assert len(outcome) == 1


async def test_a_wait_with_a_limit_says_none_came_and_a_later_item_still_comes() -> None:
    channel: Channel[int] = Channel(4)
    assert await channel.receive(within=0.01) is None
    channel.send_nowait(7)
    assert await channel.receive(within=0.01) == 7


async def test_a_cancelled_wait_loses_no_item() -> None:
    channel: Channel[int] = Channel(4)
    with anyio.move_on_after(0.01):
        await channel.receive()
    channel.send_nowait(3)
    assert await channel.receive() == 3
