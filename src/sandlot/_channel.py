"""A bounded queue between two tasks of one event loop, closable from either end.

anyio's memory object streams do this too, but record the waiting task's details each time a
receive waits: the session helper's replies, its request frames and a language server's
messages all wait on every call, and that bookkeeping was a fifth of the host's work in a warm
navigation call (bench/lsp_bench.py). One producer, one consumer.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

import anyio

T = TypeVar("T")


class Channel(Generic[T]):
    """At most `size` items wait (then `send` waits for the consumer). `end()`: the producer
    sends no more (the consumer gets what is left, then `anyio.EndOfStream`); `drop()`: the
    consumer wants no more (sends raise `anyio.ClosedResourceError`)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._buffer: collections.deque[T] = collections.deque()
        self._ended = False
        self._dropped = False
        self._waiting: asyncio.Future[None] | None = None  # the consumer, for an item
        self._full: asyncio.Future[None] | None = None  # the producer, for room

    @staticmethod
    def _wake(waiter: asyncio.Future[None] | None) -> None:
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self, within: float | None = None) -> T | None:
        """The next item. With `within`: None when none came in that many seconds (a timer
        per wait, not a cancel scope)."""
        while not self._buffer:
            if self._ended or self._dropped:
                raise anyio.EndOfStream
            loop = asyncio.get_running_loop()
            waiting = self._waiting = loop.create_future()
            timer = None if within is None else loop.call_later(within, self._wake, waiting)
            try:
                await waiting
            finally:
                if timer is not None:
                    timer.cancel()
                self._waiting = None
            if within is not None and not (self._buffer or self._ended or self._dropped):
                return None
        item = self._buffer.popleft()
        self._wake(self._full)
        return item

    def send_nowait(self, item: T) -> None:
        if self._ended or self._dropped:
            raise anyio.ClosedResourceError
        if len(self._buffer) >= self._size:
            raise anyio.WouldBlock
        self._buffer.append(item)
        self._wake(self._waiting)

    async def send(self, item: T) -> None:
        while not (self._ended or self._dropped) and len(self._buffer) >= self._size:
            full = self._full = asyncio.get_running_loop().create_future()
            try:
                await full
            finally:
                self._full = None
        self.send_nowait(item)

    def end(self) -> None:
        """The producer's side: nothing more comes."""
        self._ended = True
        self._wake(self._waiting)
        self._wake(self._full)

    def drop(self) -> None:
        """The consumer's side: nothing more is wanted."""
        self._dropped = True
        self._buffer.clear()
        self._wake(self._full)
        self._wake(self._waiting)

    async def drain(self) -> AsyncIterator[T]:
        """Every item until the producer ends; the channel is dropped when this stops (a
        command's stdin fed from it has gone)."""
        try:
            while True:
                try:
                    item = await self.receive()
                except anyio.EndOfStream:
                    return
                assert item is not None
                yield item
        finally:
            self.drop()
