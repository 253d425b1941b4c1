"""The session helper's core, run INSIDE the sandbox: frames in on stdin, frames out on stdout,
each request served by a handler in a thread of its own (adr/0042).

A frame is a 9-byte header -- payload length (4 bytes, big-endian, at most `MAX_FRAME`),
request id (4 bytes; 0 is the helper's own), kind (1 byte) -- then the payload. Host to
helper: `REQUEST` (JSON {"op", "args"}), `DATA` (channel byte + bytes: input for an open
request), `END_INPUT`, `CANCEL`. Helper to host: `HELLO` (JSON, once), `DATA` (channel byte +
bytes: output; several per request), `RESULT` (JSON, the request's last frame), `PING` (id 0,
every `PING_SECONDS`, so the host tells a wedged helper from a slow request) and `FATAL` (JSON,
a frame it could not accept; the helper then exits).

Adding an operation: a module in this package with

    from sandlot._session.helper.core import Request, op

    @op("name")
    def name(req: Request) -> dict[str, object] | None: ...

(req.args: the JSON args; req.send(data, channel) streams output; req.read() / read_all()
take the host's input until END_INPUT; req.cancelled / req.on_cancel(fn) for CANCEL; the
return value is the RESULT payload), and its module name in bundle.HELPER_MODULES.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

HEADER = struct.Struct(">IIc")
MAX_FRAME = 1 << 20
VERSION = 1
PING_SECONDS = 1.0

REQUEST, DATA, END_INPUT, CANCEL, SOURCE = b"Q", b"D", b"E", b"C", b"S"
HELLO, NEED, RESULT, PING, FATAL = b"H", b"N", b"X", b"P", b"F"
STDIN, STDOUT, STDERR = 0, 1, 2

if TYPE_CHECKING:  # not at run time: Python 3.8 cannot subscript collections.abc.Callable
    Handler = Callable[["Request"], "dict[str, Any] | None"]

#: The operations this helper serves, by name (filled by @op as the modules load).
OPS: dict[str, Handler] = {}


def op(name: str) -> Callable[[Handler], Handler]:
    """Register a handler for the operation NAME."""

    def register(handler: Handler) -> Handler:
        OPS[name] = handler
        return handler

    return register


def frame(rid: int, kind: bytes, payload: bytes = b"") -> bytes:
    return HEADER.pack(len(payload), rid, kind) + payload


class Output:
    """Frames to a descriptor, whole, one at a time (handlers write from many threads)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.lock = threading.Lock()

    def send(self, rid: int, kind: bytes, payload: bytes = b"", before: bytes = b"") -> None:
        """The frame, after the frames `before` (whole frames), in one write."""
        data = memoryview(before + frame(rid, kind, payload))
        with self.lock:
            try:
                while data:
                    data = data[os.write(self.fd, data):]
            except OSError:
                os._exit(0)  # the host is gone: nothing is left to serve


class Cancelled(Exception):
    """Raised by Request.read in a cancelled request: its input is incomplete, never used."""


class Request:
    """One request, as its handler sees it (the handler runs in a thread of its own)."""

    def __init__(self, rid: int, name: str, args: Any, output: Output) -> None:
        self.id = rid
        self.op = name
        self.args = args
        self.output = output
        self.cancelled = threading.Event()
        self._input: queue.Queue[bytes | None] = queue.Queue()
        self._hooks: list[Callable[[], None]] = []
        self._lock = threading.Lock()
        self.last = b""  # DATA frames sent with the RESULT (send_last)

    def send(self, data: bytes, channel: int = STDOUT) -> None:
        """Output for this request, in frames of at most MAX_FRAME bytes."""
        if self.cancelled.is_set():
            return
        tag = bytes((channel,))
        step = MAX_FRAME - 1
        for start in range(0, len(data), step):
            self.output.send(self.id, DATA, tag + data[start:start + step])

    def send_last(self, data: bytes, channel: int = STDOUT) -> None:
        """The request's last output, sent in one write with its RESULT: the host then wakes
        once for both (a quick request's whole answer, e.g. a navigation call's read_many)."""
        if len(data) >= MAX_FRAME or self.cancelled.is_set():
            self.send(data, channel)
        elif data:
            self.last = frame(self.id, DATA, bytes((channel,)) + data)

    def read(self) -> bytes | None:
        """The next chunk of the host's input; None once it ended. Cancelled: raised once the
        request was cancelled (what came so far is not the whole input)."""
        chunk = self._input.get()
        if self.cancelled.is_set():
            self._input.put(None)  # every later read raises too
            raise Cancelled()
        return chunk

    def read_all(self) -> bytes:
        chunks: list[bytes] = []
        while True:
            chunk = self.read()
            if chunk is None:
                return b"".join(chunks)
            chunks.append(chunk)

    def on_cancel(self, hook: Callable[[], None]) -> None:
        """Call HOOK when the request is cancelled (at once if it already was)."""
        with self._lock:
            if not self.cancelled.is_set():
                self._hooks.append(hook)
                return
        hook()

    def cancel(self) -> None:
        with self._lock:
            self.cancelled.set()
            hooks, self._hooks = self._hooks, []
        self._input.put(None)
        for hook in hooks:
            with contextlib.suppress(Exception):
                hook()


class Workers:
    """The threads requests run in, each request in a thread of its own as before, but a
    thread that finished one waits for the next instead of ending: starting a thread was most
    of a quick request's time in the helper (a navigation call's read_many, 0.1-0.2 ms on a
    busy 2-core machine). A request never waits for another: with no thread idle, one more
    starts. At most `KEEP` idle threads stay."""

    KEEP = 4

    def __init__(self, run: Callable[[Request], None]) -> None:
        self.run = run
        self.idle = 0  # threads waiting for a request no other request has claimed
        self.lock = threading.Lock()
        self.queue: queue.SimpleQueue[Request] = queue.SimpleQueue()

    def submit(self, request: Request) -> None:
        with self.lock:
            claimed = self.idle > 0
            if claimed:
                self.idle -= 1
        self.queue.put(request)
        if not claimed:
            threading.Thread(target=self.work, daemon=True).start()

    def work(self) -> None:
        while True:
            self.run(self.queue.get())
            with self.lock:
                if self.idle >= self.KEEP:
                    return
                self.idle += 1


class Server:
    """Reads frames, runs each request in a thread (Workers), routes input and cancels to
    it."""

    def __init__(self, source: IO[bytes], output: Output) -> None:
        self.source = source
        self.output = output
        self.requests: dict[int, Request] = {}
        self.lock = threading.Lock()
        self.workers = Workers(self.run)

    def fatal(self, why: str) -> None:
        self.output.send(0, FATAL, json.dumps({"error": why}).encode())
        os._exit(3)

    def read_exact(self, size: int) -> bytes | None:
        data = self.source.read(size) if size else b""
        if data is None or len(data) < size:
            return None
        return data

    def serve(self) -> None:
        self.output.send(0, HELLO, json.dumps({
            "version": VERSION, "pid": os.getpid(), "ops": sorted(OPS),
            "python": list(sys.version_info[:3])}).encode())
        threading.Thread(target=self.ping, daemon=True).start()
        while True:
            head = self.read_exact(HEADER.size)
            if head is None:
                break
            length, rid, kind = HEADER.unpack(head)
            if length > MAX_FRAME:
                self.fatal("frame too large")
            payload = self.read_exact(length)
            if payload is None:
                break
            self.dispatch(rid, kind, payload)
        # The host closed our input: it is gone or done with us. Nothing outlives it.
        with self.lock:
            pending = list(self.requests.values())
        for request in pending:
            request.cancel()
        os._exit(0)

    def dispatch(self, rid: int, kind: bytes, payload: bytes) -> None:
        if kind == REQUEST:
            try:
                body = json.loads(payload)
                name, args = str(body["op"]), body.get("args")
            except (ValueError, KeyError, TypeError):
                self.fatal("malformed request")
            with self.lock:
                if rid == 0 or rid in self.requests:
                    self.fatal("request id in use")
                request = self.requests[rid] = Request(rid, name, args, self.output)
            self.workers.submit(request)
            return
        with self.lock:
            request_or_none = self.requests.get(rid)
        if kind not in (DATA, END_INPUT, CANCEL):
            self.fatal("unknown frame kind")
        if request_or_none is None:
            return  # it ended meanwhile: late input or cancel is moot
        if kind == DATA:
            request_or_none._input.put(payload[1:])
        elif kind == END_INPUT:
            request_or_none._input.put(None)
        else:
            request_or_none.cancel()

    def run(self, request: Request) -> None:
        handler = OPS.get(request.op)
        try:
            if handler is None:
                result: dict[str, Any] = {"error": "unknown operation " + request.op[:64]}
            else:
                result = handler(request) or {}
        except Cancelled:
            result = {"error": "cancelled"}
        except Exception:
            result = {"error": traceback.format_exc()[-4000:]}
        with self.lock:
            self.requests.pop(request.id, None)
        last = b"" if request.cancelled.is_set() else request.last
        self.output.send(request.id, RESULT, json.dumps(result).encode(), before=last)

    def ping(self) -> None:
        while True:
            time.sleep(PING_SECONDS)
            self.output.send(0, PING)


def main() -> None:
    sys.stdout.flush()
    Server(sys.stdin.buffer, Output(sys.stdout.fileno())).serve()
