"""`sandlot mcp` over stdio: the protocol's lines read through the event loop, each bounded.

The SDK reads stdin in a worker thread, which a cancellation cannot interrupt: SIGTERM would
wait for the client's next message. Read through the event loop instead, the server ends (and
closes its sandbox) at once (adr/0023).

A line longer than the bound is not buffered: what arrived is dropped, the rest of the line
is read and thrown away as it comes, and the client gets a JSON-RPC error (id null: the id is
in the part never parsed) before the next message is served (adr/0032). Memory stays at
about the bound whatever a client sends.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

#: Default bound of one JSON-RPC message (one line); a write tool call can be large.
MAX_MESSAGE_BYTES = 64 << 20
#: JSON-RPC's "Invalid Request": the message was never parsed, so not a parse error proper.
INVALID_REQUEST = -32600
_CHUNK = 1 << 20


class PipeLines:
    """The protocol's input lines, read from the pipe without a worker thread.

    Standard input is moved to another descriptor and fd 0 points at /dev/null meanwhile, so
    nothing the server starts can read the protocol."""

    def __init__(self, fd: int, saved: int, limit: int) -> None:
        self.fd = fd
        self.saved = saved
        self.limit = limit
        self._write: Any = None
        self._ready = anyio.Event()

    @classmethod
    def claim(cls, limit: int = MAX_MESSAGE_BYTES) -> PipeLines | None:
        """None when stdin is not a pipe, socket or terminal (the SDK's reader then)."""
        try:
            mode = os.fstat(0).st_mode
        except OSError:
            return None
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            return None
        fd = os.dup(0)
        saved = os.dup(0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        return cls(fd, saved, limit)

    def answer_with(self, write: Any) -> None:
        """The SDK's outgoing stream, where the error for an over-long line goes."""
        self._write = write
        self._ready.set()

    def restore(self) -> None:
        os.dup2(self.saved, 0)
        os.close(self.saved)

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _too_long(self, size: int) -> None:
        await self._ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(
            code=INVALID_REQUEST,
            message=f"message of {size} bytes or more exceeds this server's limit of "
            f"{self.limit} bytes (sandlot mcp --max-message-bytes); it was discarded",
        ))
        # Closed: the server is ending and nobody reads the answer.
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._write.send(SessionMessage(error))

    async def _lines(self) -> AsyncIterator[str]:
        loop = asyncio.get_running_loop()
        # The reader's own limit only sets its flow control: read() below never hits it.
        reader = asyncio.StreamReader(limit=_CHUNK)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(self.fd, "rb", 0))
        line = bytearray()
        dropped = 0  # > 0: inside an over-long line, this many bytes thrown away so far
        try:
            while True:
                chunk = await reader.read(_CHUNK)
                if not chunk:
                    if dropped:
                        await self._too_long(dropped)
                    elif line:
                        yield line.decode("utf-8", "replace")
                    return
                start = 0
                while start < len(chunk):
                    end = chunk.find(b"\n", start)
                    piece = chunk[start:] if end < 0 else chunk[start:end + 1]
                    start += len(piece)
                    if dropped:
                        dropped += len(piece)
                    elif len(line) + len(piece) > self.limit + 1:  # + 1: the newline
                        dropped = len(line) + len(piece)
                        line = bytearray()
                    else:
                        line += piece
                    if end < 0:
                        continue
                    if dropped:
                        size, dropped = dropped, 0
                        await self._too_long(size)
                    else:
                        text = line.decode("utf-8", "replace")
                        line = bytearray()
                        yield text
        finally:
            transport.close()


async def serve_stdio(server: Server[Any], max_message_bytes: int = MAX_MESSAGE_BYTES) -> None:
    """Serve `server` on this process's stdin and stdout until the client closes stdin."""
    lines = PipeLines.claim(max_message_bytes)
    try:
        async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
            if lines is not None:
                lines.answer_with(write)
            await server.run(read, write, server.create_initialization_options())
    finally:
        if lines is not None:
            lines.restore()
