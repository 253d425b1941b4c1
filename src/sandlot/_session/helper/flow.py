"""Flow control for the helper's byte streams (commands' stdio, forwarded connections), run
INSIDE the sandbox (adr/0043).

The helper's one stdout carries every stream of every request, so no stream may make the host
buffer without bound or hold the others up. Each direction has a window:

* Output (helper -> host, channels 1 and 2): the helper reads from a pipe or socket only while
  it holds credit for that channel, and the host grants credit back as its consumer takes the
  bytes. A command flooding stdout is thus held by its own full pipe, its output never waits in
  memory, and a slow consumer of one command stalls that command alone.
* Input (host -> helper): the host sends at most a window of bytes the helper has not yet
  acknowledged; a writer thread per stream writes them (a process that does not read its stdin
  blocks that thread only) and acknowledges each chunk once written.

Host input for a stream arrives as DATA frames whose payload starts with one tag byte:
`i` bytes of input, `e` end of input, `c` credit (channel byte + 4-byte count), `k` kill.
Control frames to the host travel on `CONTROL` as JSON (`{"pid": n}`, `{"ack": n}`, ...).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import struct
import threading
from collections.abc import Callable
from typing import Any

from sandlot._session.helper.core import Cancelled, Request

#: Channel of the helper's control messages for a stream (JSON).
CONTROL = 3
#: Largest read from a pipe or socket, and so the largest output frame of a stream.
CHUNK = 256 << 10
#: Bytes of output a stream may have in flight before the host grants more (its default).
WINDOW = 1 << 20

INPUT, END, CREDIT, KILL = b"i", b"e", b"c", b"k"
_GRANT = struct.Struct(">BI")


def control(req: Request, **message: Any) -> None:
    req.send(json.dumps(message).encode(), CONTROL)


class Credit:
    """Bytes the host has room for on one channel; a reader takes some before each read."""

    def __init__(self, initial: int) -> None:
        self._left = initial
        self._closed = False
        self._cond = threading.Condition()

    def take(self, want: int) -> int:
        """Up to `want` bytes of credit, waiting for some; 0 once closed."""
        with self._cond:
            while self._left <= 0 and not self._closed:
                self._cond.wait()
            if self._closed:
                return 0
            got = min(want, self._left)
            self._left -= got
            return got

    def give(self, count: int) -> None:
        with self._cond:
            self._left += count
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class Reader:
    """Copies one descriptor to the host on `channel`, within its credit, until EOF or until
    abandoned (a process that left the command's group may hold a pipe open forever)."""

    def __init__(self, req: Request, fd: int, channel: int, window: int,
                 read: Callable[[int, int], bytes] = os.read) -> None:
        self.req = req
        self.fd = fd
        self.channel = channel
        self.credit = Credit(window)
        self._read = read
        self._abandoned = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        poller = select.poll()
        poller.register(self.fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        try:
            while True:
                allowed = self.credit.take(CHUNK)
                if not allowed:
                    return
                # Wait in short polls so an abandoned reader ends even while nothing comes.
                while not poller.poll(200):
                    if self._abandoned.is_set():
                        return
                try:
                    data = self._read(self.fd, allowed)
                except OSError:
                    return
                if not data:
                    return
                if len(data) < allowed:
                    self.credit.give(allowed - len(data))
                self.req.send(data, self.channel)
        finally:
            self._abandoned.set()

    def done(self, timeout: float | None = None) -> bool:
        self.thread.join(timeout)
        return not self.thread.is_alive()

    def abandon(self) -> None:
        self._abandoned.set()
        self.credit.close()


class Writer:
    """Writes the host's input for one stream in a thread of its own, acknowledging each
    chunk once written; `close` runs after the last chunk (the host's end of input)."""

    def __init__(self, req: Request, write: Callable[[bytes], None],
                 close: Callable[[], None]) -> None:
        self.req = req
        self._write = write
        self._close = close
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._broken = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def put(self, data: bytes | None) -> None:
        self._queue.put(data)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                break
            if not self._broken:
                try:
                    self._write(data)
                except OSError:
                    self._broken = True  # the reader went away: the rest has nowhere to go
            control(self.req, ack=len(data))  # the host's window moves on either way
        with contextlib.suppress(OSError):
            self._close()


def route_input(req: Request, readers: dict[int, Reader], writer: Writer | None,
                kill: Callable[[], None], finished: threading.Event) -> None:
    """Read the host's input for `req` until it finishes: input and its end to `writer`,
    credit to the readers, kill to `kill`. Runs in a thread of its own."""
    while True:
        try:
            chunk = req.read()
        except Cancelled:
            if not finished.is_set():
                kill()  # the host gave the request up: nothing of it may go on
            return
        if finished.is_set():
            return
        if chunk is None:
            continue  # END_INPUT of the core: this stream's end comes as an `e` tag
        tag, body = chunk[:1], chunk[1:]
        if tag == INPUT and writer is not None:
            writer.put(body)
        elif tag == END and writer is not None:
            writer.put(None)
        elif tag == CREDIT and len(body) == _GRANT.size:
            channel, count = _GRANT.unpack(body)
            reader = readers.get(channel)
            if reader is not None:
                reader.credit.give(count)
        elif tag == KILL:
            kill()


def grant(channel: int, count: int) -> bytes:
    """The input payload that gives `count` bytes of credit on `channel` (host side too)."""
    return CREDIT + _GRANT.pack(channel, count)
