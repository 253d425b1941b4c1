"""The host side of the session helper: one helper process per sandbox and environment,
started on first use as a run-marked command of the sandbox's engine (so over the backend's
own transport, tracked, swept and ended with the sandbox like any command), and the calls
multiplexed over its stdin/stdout (adr/0042).

Everything the helper sends is untrusted: frames are bounded (`MAX_FRAME`), ids must be ones
we issued, and a frame that breaks the protocol ends the helper. A helper that exits, breaks
the protocol or is silent (not even its PING) for `WEDGE_SECONDS` while a call waits is ended;
its calls fail with `HelperLost` (the caller falls back to the one-command path), the next
call starts it again once, and after a second loss the session stays off (`HelperUnavailable`).

Using it for a new operation (after registering it in the helper, see helper/core.py):

    session = session_for(engine_of(sandbox), env)
    call = await session.open("name", {"some": "args"})   # HelperUnavailable: fall back
    try:
        await call.send(b"input", channel=0); await call.end_input()
        async for channel, data in call: ...                 # DATA frames, until RESULT
        result = call.result                                  # the RESULT payload (a dict)
    finally:
        await call.aclose()                                   # cancels it if not finished

or `await session.run("name", args, stdin=..., on_data=..., timeout=...)` for one shot.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import math
import weakref
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Any

import anyio

from .._channel import Channel
from .._engine import Engine, RunningCommand, SpawnSpec
from . import bundle
from .helper import core

log = logging.getLogger("sandlot.session")

#: Seconds the helper may take to start (python3's start, the bundle sent and cached).
START_TIMEOUT = 30.0
#: Seconds without one frame from the helper (it PINGs every second) while a call waits,
#: after which it counts as wedged (stopped, or starved) and is ended.
WEDGE_SECONDS = 10.0
#: Starts a session may make: the first, and one restart after a loss.
MAX_STARTS = 2
#: Exit codes of the start line meaning "this sandbox cannot run the helper": no python3, or
#: one older than 3.8.
_CANNOT_RUN = (126, 127)

Item = tuple[int, bytes] | dict[str, Any] | BaseException


class SessionError(Exception):
    """The helper could not serve a call (internal: callers fall back to one command)."""


class HelperUnavailable(SessionError):
    """The session is off: turned off, no usable python3, or lost twice."""


class HelperLost(SessionError):
    """The helper ended, broke the protocol or stopped answering while the call waited."""


class Call:
    """One open request: input with `send` / `end_input`, output by iterating (channel,
    data) until the RESULT, which is then `result`."""

    def __init__(self, session: Session, rid: int) -> None:
        self.session = session
        self.id = rid
        self.result: dict[str, Any] | None = None
        self._items: Channel[Item] = Channel(16)

    async def send(self, data: bytes, channel: int = core.STDIN) -> None:
        tag = bytes((channel,))
        step = core.MAX_FRAME - 1
        for start in range(0, len(data), step):
            chunk = tag + data[start:start + step]
            await self.session._write(core.frame(self.id, core.DATA, chunk))

    async def end_input(self) -> None:
        await self.session._write(core.frame(self.id, core.END_INPUT))

    async def receive(self) -> tuple[int, bytes] | None:
        """The next (channel, data), or None once the RESULT came (then in `result`)."""
        if self.result is not None:
            return None
        while True:
            try:
                item = await self._items.receive(within=1.0)
            except anyio.EndOfStream:
                raise HelperLost("the session helper ended") from None
            if item is not None:
                break
            await self.session._check_alive()
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, dict):
            self.result = item
            return None
        return item

    def __aiter__(self) -> AsyncIterator[tuple[int, bytes]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[tuple[int, bytes]]:
        while (item := await self.receive()) is not None:
            yield item

    async def aclose(self) -> None:
        """Done with the call: a call without its RESULT yet is cancelled in the helper."""
        finished = self.result is not None
        self.session._calls.pop(self.id, None)
        self._items.drop()
        if not finished and self.session._up:
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                with anyio.fail_after(5):
                    await self.session._write(core.frame(self.id, core.CANCEL))


class Session:
    """The helper for one sandbox (engine) and one environment."""

    def __init__(self, engine: Engine, env: dict[str, str]) -> None:
        self.engine = engine
        self.env = dict(env)
        self.starts = 0
        self.disabled: str | None = None
        self.hello: dict[str, Any] = {}
        self._up = False
        self._lock = anyio.Lock()
        self._ids = itertools.count(1)
        self._issued = 0
        self._calls: dict[int, Call] = {}
        self._buffer = bytearray()
        self._running: RunningCommand | None = None
        self._input: Channel[bytes] | None = None
        self._hello = anyio.Event()
        self._heard = 0.0
        self._stderr = bytearray()
        self._watch: asyncio.Future[None] | None = None
        self._generation = 0
        self._ending: set[asyncio.Future[None]] = set()  # helpers being ended (see _broken)

    @property
    def generation(self) -> int:
        """Changes whenever the helper process changes (a start, a loss): what was set up
        with one helper process is void under another."""
        return self._generation

    # ---- calls ------------------------------------------------------------------------------

    async def open(self, op: str, args: Any) -> Call:
        """Send a request; HelperUnavailable when the session is off (fall back)."""
        self.engine.ensure_open()
        await self._ensure_started()
        rid = next(self._ids)
        self._issued = rid
        call = self._calls[rid] = Call(self, rid)
        try:
            await self._write(core.frame(rid, core.REQUEST,
                                         json.dumps({"op": op, "args": args}).encode()))
        except BaseException:
            await call.aclose()
            raise
        return call

    async def run(
        self,
        op: str,
        args: Any,
        *,
        stdin: bytes | AsyncIterable[bytes] | None = None,
        on_data: Callable[[int, bytes], Awaitable[None]] | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any] | None:
        """One request to its RESULT (None when `timeout` ended it first: it is cancelled)."""
        call = await self.open(op, args)

        async def feed(source: bytes | AsyncIterable[bytes]) -> None:
            try:
                if isinstance(source, bytes):
                    await call.send(source)
                else:
                    async for chunk in source:
                        await call.send(chunk)
                await call.end_input()
            except HelperLost:
                pass  # the output side raises it (it ends the call either way)

        try:
            with anyio.move_on_after(math.inf if timeout is None else timeout):
                if stdin is None:  # output only: no task group (a navigation call's read)
                    async for channel, data in call:
                        if on_data is not None:
                            await on_data(channel, data)
                    return call.result
                # Input and output at once: a helper lost while the input still comes (a
                # stream that waits) is noticed on the output side, and ends the feeding.
                failed: Exception | None = None
                async with anyio.create_task_group() as group:
                    if stdin is not None:
                        group.start_soon(feed, stdin)
                    try:
                        async for channel, data in call:
                            if on_data is not None:
                                await on_data(channel, data)
                    except Exception as exc:  # raised below, not as an exception group
                        failed = exc
                    group.cancel_scope.cancel()
                if failed is not None:
                    raise failed
            return call.result
        finally:
            await call.aclose()

    # ---- the helper process -----------------------------------------------------------------

    async def _ensure_started(self) -> None:
        if self._up:
            return
        async with self._lock:
            if self._up:
                return
            if self.disabled is not None:
                raise HelperUnavailable(self.disabled)
            if self.starts >= MAX_STARTS:
                self._disable("it was lost twice")
                raise HelperUnavailable(str(self.disabled))
            self.starts += 1
            await self._start()

    async def _start(self) -> None:
        self._generation += 1
        self._buffer = bytearray()
        self._stderr = bytearray()
        self._hello = anyio.Event()
        self._input = frames = Channel[bytes](64)

        generation = self._generation

        async def on_stdout(data: bytes) -> None:
            if generation == self._generation:
                await self._feed(data)

        async def on_stderr(data: bytes) -> None:
            self._stderr += data
            del self._stderr[:-4096]

        spec = SpawnSpec(
            argv=["sh", "-c", bundle.START, "sandlot-session-start", bundle.BOOT,
                  bundle.digest(), str(len(bundle.bundle()))],
            cwd="/", env=self.env, sudo=False, stdin=frames.drain(), stdout=on_stdout,
            stderr=on_stderr, display="sandlot session helper",
        )
        running = self._running = await self.engine.spawn(spec)
        exited = anyio.Event()
        codes: list[int] = []
        self._watch = asyncio.ensure_future(self._watch_exit(running, generation, exited, codes))
        self._heard = anyio.current_time()
        with anyio.move_on_after(START_TIMEOUT) as waited:
            async with anyio.create_task_group() as group:
                async def first_of(event: anyio.Event) -> None:
                    await event.wait()
                    group.cancel_scope.cancel()

                group.start_soon(first_of, self._hello)
                group.start_soon(first_of, exited)
        if self._hello.is_set() and not exited.is_set():
            self._up = True
            return
        why = "did not start in time" if waited.cancelled_caught else "exited at its start"
        with anyio.CancelScope(shield=True):
            await self._end(running)
        code = codes[0] if codes else None
        if code in _CANNOT_RUN:
            self._disable("the sandbox has no usable python3 (3.8 or newer)")
        log.warning("sandbox %s: the session helper %s (exit %s): %s", self.engine.name, why,
                    code, bytes(self._stderr).decode("utf-8", "replace").strip()[-300:])
        raise HelperUnavailable(f"the session helper {why}")

    async def _watch_exit(self, running: RunningCommand, generation: int, exited: anyio.Event,
                          codes: list[int]) -> None:
        try:
            codes.append(await running.wait())
        except Exception as exc:  # the transport failed: the helper is as good as gone
            log.debug("session helper wait failed: %s", exc)
        finally:
            self.engine.untrack(running)
            exited.set()
            if generation == self._generation:
                self._lost("the session helper exited")

    def _disable(self, why: str) -> None:
        if self.disabled is None:
            self.disabled = why
            log.warning("sandbox %s: the session helper is off (%s); file tools run one "
                        "command per call", self.engine.name, why)

    def _lost(self, why: str, *, quiet: bool = False) -> None:
        """Fail every waiting call; the next call starts the helper again (once)."""
        was_up, self._up = self._up, False
        self._generation += 1
        if self._input is not None:
            self._input.end()
            self._input = None
        calls, self._calls = self._calls, {}
        for call in calls.values():
            with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError):
                call._items.send_nowait(HelperLost(why))
            call._items.end()
        if was_up and not self.engine.closed and not quiet:
            log.warning("sandbox %s: %s", self.engine.name, why)
            if self.starts >= MAX_STARTS:
                self._disable(f"{why}, after a restart")

    async def _end(self, running: RunningCommand | None) -> None:
        if running is None:
            return
        with contextlib.suppress(Exception):
            await running.kill()
        self.engine.untrack(running)

    async def _broken(self, why: str) -> None:
        """The helper cannot be trusted or used any more: fail its calls and end it.

        The end runs as a task of its own. The caller is most often the helper's own output
        pump (a bad frame was just read), and a kill waits for that output to end: awaited
        here, it waited for itself for the whole drain bound, on every bad frame."""
        running = self._running
        self._lost(f"the session helper {why}; it was ended")
        if running is not None:
            ending = asyncio.ensure_future(self._end(running))
            self._ending.add(ending)
            ending.add_done_callback(self._ending.discard)

    async def _check_alive(self) -> None:
        if self._up and anyio.current_time() - self._heard > WEDGE_SECONDS:
            await self._broken(f"sent nothing for {WEDGE_SECONDS:g}s (wedged or stopped)")
        if not self._up:
            raise HelperLost("the session helper was lost")

    async def aclose(self) -> None:
        """End the helper now (the sandbox's close ends it anyway)."""
        running = self._running
        self._lost("the session was closed", quiet=True)
        await self._end(running)
        if self._ending:
            await asyncio.gather(*self._ending, return_exceptions=True)

    # ---- frames -----------------------------------------------------------------------------

    async def _write(self, data: bytes) -> None:
        if self._input is None:
            raise HelperLost("the session helper is not running")
        try:
            await self._input.send(data)
        except anyio.ClosedResourceError:
            raise HelperLost("the session helper stopped reading") from None

    async def _feed(self, data: bytes) -> None:
        self._heard = anyio.current_time()
        self._buffer += data
        size = core.HEADER.size
        while len(self._buffer) >= size:
            length, rid, kind = core.HEADER.unpack_from(self._buffer)
            if length > core.MAX_FRAME:
                await self._broken("sent an oversized frame")
                return
            if len(self._buffer) < size + length:
                return
            payload = bytes(self._buffer[size:size + length])
            del self._buffer[:size + length]
            if not await self._frame(rid, kind, payload):
                return

    async def _frame(self, rid: int, kind: bytes, payload: bytes) -> bool:
        if rid == 0:
            if kind == core.PING:
                return True
            if kind == core.NEED and not self._up and not self._hello.is_set():
                source = bundle.bundle()
                await self._write(core.HEADER.pack(len(source), 0, core.SOURCE) + source)
                return True
            if kind == core.HELLO and not self._hello.is_set():
                try:
                    hello = json.loads(payload)
                except ValueError:
                    hello = None
                if not isinstance(hello, dict):
                    await self._broken("sent a malformed hello")
                    return False
                self.hello = hello
                self._hello.set()
                return True
            await self._broken("sent an unexpected frame" if kind != core.FATAL
                               else "refused a frame")
            return False
        if rid > self._issued or kind not in (core.DATA, core.RESULT):
            await self._broken("sent a frame for no request of ours")
            return False
        call = self._calls.get(rid)
        if call is None:
            return True  # a call we gave up on (cancelled, timed out): its late output
        item: Item
        if kind == core.DATA:
            if not payload:
                await self._broken("sent a malformed frame")
                return False
            item = (payload[0], payload[1:])
        else:
            try:
                result = json.loads(payload)
            except ValueError:
                result = None
            if not isinstance(result, dict):
                await self._broken("sent a malformed result")
                return False
            item = result
            self._calls.pop(rid, None)
        with contextlib.suppress(anyio.ClosedResourceError):
            await call._items.send(item)
        return True


_SESSIONS: weakref.WeakKeyDictionary[Engine, dict[tuple[tuple[str, str], ...], Session]] = (
    weakref.WeakKeyDictionary()
)


def session_for(engine: Engine, env: dict[str, str]) -> Session:
    """The session of this sandbox for commands run with `env` (its PATH picks the python3)."""
    per_engine = _SESSIONS.setdefault(engine, {})
    key = tuple(sorted(env.items()))
    session = per_engine.get(key)
    if session is None:
        session = per_engine[key] = Session(engine, env)
    return session


def helper_commands(engine: Engine) -> set[RunningCommand]:
    """The running session helpers of this sandbox: sandlot's own long-lived commands, which
    callers counting the sandbox's running commands (a restore's busy check) leave out."""
    return {s._running for s in _SESSIONS.get(engine, {}).values() if s._running is not None}
