"""The HTTP protocol under uvicorn, with a deadline for a request's head.

uvicorn's h11 protocol waits forever for a connection that sent nothing, or only part of a
request line: its keep-alive timer starts after a response, never before the first request.
Enough such connections (a slow-loris, a port scanner, a client stuck mid-send) would pin the
server's sockets. Here a connection must deliver a complete request head within
`HEADER_TIMEOUT` seconds of connecting, or it is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

#: Seconds a new connection has to send a complete request line and headers.
HEADER_TIMEOUT = 10.0


class HeadDeadlineH11(H11Protocol):
    """h11 protocol that closes a connection whose first request head is late."""

    header_timeout = HEADER_TIMEOUT

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_deadline = self.loop.call_later(self.header_timeout, self._head_is_late)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and self._head_deadline is not None:
            # A request started: from here on uvicorn's own timers and the body deadline apply.
            self._head_deadline.cancel()
            self._head_deadline = None

    def connection_lost(self, exc: Exception | None) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None
        super().connection_lost(exc)

    def _head_is_late(self) -> None:
        self._head_deadline = None
        if self.cycle is None and not self.transport.is_closing():
            self.transport.close()


def with_header_timeout(seconds: float) -> type[HeadDeadlineH11]:
    """The protocol class with its own deadline (uvicorn takes a class, not an instance)."""
    return type("HeadDeadlineH11", (HeadDeadlineH11,), {"header_timeout": seconds})
