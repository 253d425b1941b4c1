"""Bounded output capture: the one helper every backend feeds a command's bytes through.

A command may print a gigabyte; capturing must cost at most `limit` bytes per stream, while
line callbacks still see every line as it arrives. Keeping the TAIL (not the head) is deliberate:
the end of a failing build's output is where the error is.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable

from .secrets.scrub import StreamScrubber

#: A line longer than this is handed to the callback in pieces, so one endless line
#: (no newline in a gigabyte) cannot grow the line buffer without bound.
MAX_LINE_BYTES = 1 << 20


class OutputCapture:
    """Keeps the last `limit` bytes of a stream and splits it into lines for a callback."""

    def __init__(
        self, limit: int, on_line: Callable[[str], None] | None = None,
        scrub: StreamScrubber | None = None,
    ) -> None:
        if limit < 0:
            raise ValueError("limit must be >= 0")
        self._limit = limit
        self._tail = bytearray()
        self._total = 0
        self._on_line = on_line
        self._pending = bytearray()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.callback_error: BaseException | None = None
        #: Secrets are replaced before anything is kept or called back (see sandlot.secrets).
        self._scrub = scrub

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def truncated(self) -> bool:
        return self._total > self._limit

    def feed(self, data: bytes) -> None:
        if self._scrub is not None:
            data = self._scrub.feed(data)
        self._keep(data)

    def _keep(self, data: bytes) -> None:
        if not data:
            return
        self._total += len(data)
        if len(data) >= self._limit:
            self._tail = bytearray(data[len(data) - self._limit :]) if self._limit else bytearray()
        else:
            self._tail += data
            # Trim in amortised steps: only when the buffer doubled past the limit.
            if len(self._tail) > 2 * self._limit:
                del self._tail[: len(self._tail) - self._limit]
        if self._on_line is not None and self.callback_error is None:
            self._split(data)

    def _split(self, data: bytes) -> None:
        self._pending += data
        start = 0
        while True:
            newline = self._pending.find(b"\n", start)
            if newline < 0:
                break
            self._emit(bytes(self._pending[start:newline]))
            start = newline + 1
        if start:
            del self._pending[:start]
        while len(self._pending) > MAX_LINE_BYTES:
            self._emit(bytes(self._pending[:MAX_LINE_BYTES]), final=False)
            del self._pending[:MAX_LINE_BYTES]

    def _emit(self, raw: bytes, final: bool = True) -> None:
        assert self._on_line is not None
        if self.callback_error is not None:
            return
        text = self._decoder.decode(raw, final=final)
        if text.endswith("\r"):
            text = text[:-1]
        try:
            self._on_line(text)
        except Exception as exc:  # a broken callback must not kill the pump; re-raised later
            self.callback_error = exc

    def close(self) -> None:
        """Flush a last line that had no trailing newline."""
        if self._scrub is not None:
            self._keep(self._scrub.flush())
            self._scrub = None
        if self._on_line is not None and self._pending and self.callback_error is None:
            self._emit(bytes(self._pending))
        self._pending.clear()

    def text(self) -> str:
        data = bytes(self._tail[-self._limit :]) if self._limit else b""
        if self.truncated:
            # The cut may have split a multi-byte character: drop leading continuation bytes.
            i = 0
            while i < len(data) and i < 4 and (data[i] & 0xC0) == 0x80:
                i += 1
            data = data[i:]
        return data.decode("utf-8", errors="replace")
