"""JSON-RPC 2.0 over a language server's stdin/stdout, with LSP's Content-Length framing.

The server is a command in the sandbox, started through the exec engine (marked and tracked:
closing the sandbox ends it, and everything it spawned). Its stdin is a stream we keep open
and write frames to; its stdout arrives in chunks that `FrameReader` cuts into messages.
What the server writes is untrusted input: a frame is bounded in size, and a malformed one
ends the connection with a typed error rather than a guess.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio

from .. import _shell
from .._channel import Channel
from .._engine import RunningCommand, SpawnSpec, engine_of
from ..errors import LanguageServerCrashedError, LanguageServerRequestError
from ..output import OutputCapture
from ..sandbox import Sandbox

log = logging.getLogger(__name__)

#: The largest message a server may send (a workspace's symbols, a big file's diagnostics).
MAX_FRAME = 64 << 20
#: How much of the server's stderr an error quotes.
STDERR_TAIL = 16 << 10


class FrameError(Exception):
    """The server's output is not LSP framing."""


class FrameReader:
    """Cuts a byte stream into JSON messages (`Content-Length: N\\r\\n\\r\\n` then N bytes)."""

    def __init__(self, limit: int = MAX_FRAME) -> None:
        self.limit = limit
        self._buffer = bytearray()
        self._need: int | None = None

    def feed(self, chunk: bytes) -> list[Any]:
        """The complete messages `chunk` finishes (raises FrameError on a broken stream)."""
        self._buffer += chunk
        messages: list[Any] = []
        while True:
            if self._need is None:
                end = self._buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(self._buffer) > 8192:
                        raise FrameError("a header longer than 8 KiB")
                    return messages
                self._need = _content_length(bytes(self._buffer[:end]), self.limit)
                del self._buffer[: end + 4]
            if len(self._buffer) < self._need:
                return messages
            body = bytes(self._buffer[: self._need])
            del self._buffer[: self._need]
            self._need = None
            try:
                messages.append(json.loads(body))
            except ValueError as exc:
                raise FrameError(f"a message that is not JSON ({exc})") from None


def _content_length(header: bytes, limit: int) -> int:
    length: int | None = None
    for line in header.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep:
            raise FrameError(f"a header line without ':' ({line[:80]!r})")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FrameError(f"a Content-Length that is not a number ({value[:40]!r})"
                                 ) from None
    if length is None or length < 0:
        raise FrameError("a header without Content-Length")
    if length > limit:
        raise FrameError(f"a {length}-byte message, over the {limit}-byte limit")
    return length


def encode(message: Mapping[str, Any]) -> bytes:
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
    # A file read with surrogateescape may hold lone surrogates: never valid UTF-8 on the wire.
    body = text.encode("utf-8", "replace")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _expire(future: asyncio.Future[Any]) -> None:
    if not future.done():
        future.set_exception(TimeoutError())


Handler = Callable[[str, Any], Awaitable[Any]]
Listener = Callable[[str, Any], None]


class Connection:
    """One running server: requests with futures, notifications to `on_notify`, the server's
    own requests answered by `on_request`. `dead` once the process ended (every pending
    request then fails with `LanguageServerCrashedError`)."""

    def __init__(self, sandbox: Sandbox, argv: Sequence[str], *, cwd: str,
                 env: Mapping[str, str], name: str, on_notify: Listener,
                 on_request: Handler) -> None:
        self.sandbox = sandbox
        self.argv = list(argv)
        self.cwd = cwd
        self.env = dict(env)
        self.name = name
        self.on_notify = on_notify
        self.on_request = on_request
        self.dead = False
        self.exit_code: int | None = None
        self._reason = ""
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[Any]] = {}
        self._reader = FrameReader()
        self._stderr = OutputCapture(STDERR_TAIL)
        self._send: Channel[bytes] | None = None
        self._running: RunningCommand | None = None
        self._watch: asyncio.Future[None] | None = None
        self._tasks: set[asyncio.Future[None]] = set()

    async def start(self) -> None:
        self._send = frames = Channel[bytes](1000)
        engine = engine_of(self.sandbox)
        engine.ensure_open()

        async def err_sink(data: bytes) -> None:
            self._stderr.feed(data)

        spec = SpawnSpec(
            argv=_shell.to_argv(self.argv), cwd=self.cwd, env=_shell.validate_env(self.env),
            sudo=False, stdin=frames.drain(), stdout=self._on_stdout, stderr=err_sink,
            display=f"sandlot language server {self.name}",
        )
        self._running = await engine.spawn(spec)
        self._watch = asyncio.ensure_future(self._supervise(self._running))

    async def _supervise(self, running: RunningCommand) -> None:
        try:
            self.exit_code = await running.wait()
        except Exception as exc:  # the backend lost the command: as dead as an exit
            self._reason = f"the connection to it was lost ({type(exc).__name__}: {exc})"
        finally:
            engine_of(self.sandbox).untrack(running)
            self._die(self._reason or f"it exited with code {self.exit_code}")

    def _die(self, reason: str) -> None:
        if self.dead:
            return
        self.dead = True
        self._reason = reason
        if self._send is not None:
            self._send.end()
        error = self.crash_error()
        for future in self._pending.values():
            if not future.done():
                future.set_exception(error)
        self._pending.clear()

    def crash_error(self) -> LanguageServerCrashedError:
        self._stderr.close()
        tail = self._stderr.text().strip()[-2000:]
        where = f"; its stderr ends:\n{tail}" if tail else ""
        return LanguageServerCrashedError(
            f"language server {self.name} ({' '.join(self.argv)}) stopped: {self._reason}"
            f"{where}; the next call starts it again")

    @property
    def stderr(self) -> str:
        return self._stderr.text()

    async def _on_stdout(self, chunk: bytes) -> None:
        if self.dead:
            return
        try:
            messages = self._reader.feed(chunk)
        except FrameError as exc:
            self._reason = f"it wrote something that is not LSP: {exc}"
            self._spawn_task(self.kill())
            return
        for message in messages:
            self._dispatch(message)

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        method = message.get("method")
        if isinstance(method, str):
            if "id" in message:
                self._spawn_task(self._answer(message["id"], method, message.get("params")))
            else:
                try:
                    self.on_notify(method, message.get("params"))
                except Exception:  # a listener's bug must not kill the reader
                    log.exception("language server %s: notification %s", self.name, method)
            return
        ident = message.get("id")
        future = self._pending.pop(ident, None) if isinstance(ident, int) else None
        if future is None or future.done():
            return
        error = message.get("error")
        if isinstance(error, dict):
            future.set_exception(LanguageServerRequestError(
                f"language server {self.name} refused the request: "
                f"{str(error.get('message', ''))[:2000]} (code {error.get('code')})",
                code=int(error.get("code", 0)) if isinstance(error.get("code"), int) else 0))
        else:
            future.set_result(message.get("result"))

    async def _answer(self, ident: Any, method: str, params: Any) -> None:
        try:
            result = await self.on_request(method, params)
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "result": result}
        except LookupError:
            reply = {"jsonrpc": "2.0", "id": ident,
                     "error": {"code": -32601, "message": f"unsupported: {method}"}}
        await self._write(reply)

    def _spawn_task(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, message: Mapping[str, Any]) -> None:
        if self.dead or self._send is None:
            raise self.crash_error()
        try:
            await self._send.send(encode(message))
        except anyio.ClosedResourceError:
            raise self.crash_error() from None

    async def notify(self, method: str, params: Any) -> None:
        await self._write({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Any, *, timeout: float) -> Any:
        """Send a request and wait up to `timeout` s for its answer; on timeout (or cancel)
        the server is told to cancel it and `TimeoutError` is raised."""
        ident = next(self._ids)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._pending[ident] = future
        # A timer, not a cancel scope (fail_after): entering and leaving one was a twentieth
        # of the host's work in a warm call. A cancel of the caller cancels the future.
        timer = loop.call_later(timeout, _expire, future)
        try:
            await self._write({"jsonrpc": "2.0", "id": ident, "method": method,
                               "params": params})
            return await future
        except BaseException:
            if self._pending.pop(ident, None) is not None and not self.dead:
                with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                    await self.notify("$/cancelRequest", {"id": ident})
            raise
        finally:
            timer.cancel()

    async def kill(self) -> None:
        """End the server's whole process tree (idempotent)."""
        if self._running is not None:
            if not self._reason:
                self._reason = "it was stopped"
            with contextlib.suppress(Exception):
                await self._running.kill()
        if self._watch is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._watch), 30)
        self._die(self._reason or "it was stopped")
