"""Docker commands and forwarded connections over the session helper (adr/0043).

One `docker exec -i` runs the sandbox's session helper (sandlot/_session); a command is then
an `exec` request on it and a forwarded connection a `connect` request, multiplexed on its one
stream, instead of one `docker exec` client each (77 ms a command, a relay process per
connection). The helper side is _session/helper/command.py and ports.py; flow control is
_session/helper/flow.py: every output channel has a window the host tops up as its consumer
takes the bytes, and input is sent only within a window the helper acknowledges, so neither a
flooding command nor a 200 MiB download grows memory here, and one slow consumer stalls its
own stream only (the session's reader never waits for a sink).

Whatever cannot start over the helper (no python3, `session_helper=False`, a helper lost
twice) returns None / False and the caller takes today's `docker exec` path. A helper lost
while a command runs fails that command with `ConnectionLostError` (its processes are ended
by its run mark, as root); the next call starts the helper again or falls back.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import deque
from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ... import _shell
from ..._engine import RunningCommand, SpawnSpec, engine_of
from ..._session import bundle
from ..._session.client import Call, HelperLost, Session, SessionError, session_for
from ..._session.helper import flow
from ..._session.helper.core import STDERR, STDOUT
from ...errors import ConnectionLostError, ProviderError
from .cli import PROVIDER

if TYPE_CHECKING:
    from .sandbox import DockerSandbox

log = logging.getLogger("sandlot")

#: After a kill, how long the helper may take to report the end before the host gives up on
#: the call and ends the group itself (the helper drains for 2 s after a kill).
DRAIN_AFTER_KILL = 5.0
#: Control messages (pid, kill refusals) a request may have waiting; a helper sends a few.
_CONTROLS = 64
#: The status of a command ended by SIGKILL (128 + 9, as a shell reports it).
KILLED = 137
#: Seconds a control frame to the helper (a kill, a grant) may wait to be queued.
SEND_TIMEOUT = 10.0


def is_helper_start(spec: SpawnSpec) -> bool:
    """Whether `spec` starts the session helper itself (it must take the `docker exec`
    path: a helper cannot run inside itself)."""
    return len(spec.argv) > 2 and spec.argv[:2] == ["sh", "-c"] and spec.argv[2] == bundle.START


def session_of(sandbox: DockerSandbox) -> Session:
    """The helper of the Docker sandbox's own commands: started with the container's
    environment; each command's variables travel with its request."""
    return session_for(engine_of(sandbox), {})


class _Output:
    """One output channel's bytes on their way to the sink. Bounded by the window the helper
    respects, so it is never more than `flow.WINDOW` bytes."""

    def __init__(self) -> None:
        self.chunks: deque[bytes] = deque()
        self.queued = 0
        self.ended = False
        self.ready = asyncio.Event()

    def put(self, data: bytes) -> None:
        self.chunks.append(data)
        self.queued += len(data)
        self.ready.set()

    def end(self) -> None:
        self.ended = True
        self.ready.set()

    async def get(self) -> bytes | None:
        while not self.chunks:
            if self.ended:
                return None
            self.ready.clear()
            await self.ready.wait()
        data = self.chunks.popleft()
        self.queued -= len(data)
        return data


class _Stream:
    """The host side of one helper request with byte streams: output routed per channel,
    credit given back as it is consumed, input sent within the helper's window."""

    def __init__(self, call: Call, channels: tuple[int, ...]) -> None:
        self.call = call
        self.outputs = {channel: _Output() for channel in channels}
        self.controls: asyncio.Queue[dict[str, Any]] = asyncio.Queue(_CONTROLS)
        self.in_flight = 0
        self.acked = asyncio.Event()
        self.result: dict[str, Any] | None = None
        self.error: BaseException | None = None

    async def pump(self) -> None:
        """Read the call to its RESULT, never waiting for a consumer."""
        try:
            while (item := await self.call.receive()) is not None:
                channel, data = item
                output = self.outputs.get(channel)
                if output is not None:
                    output.put(data)
                    if output.queued > flow.WINDOW:
                        self._violated("sent more output than its window")
                elif channel == flow.CONTROL:
                    self._control(data)
            self.result = self.call.result
        except BaseException as exc:
            self.error = exc
            raise
        finally:
            for output in self.outputs.values():
                output.end()
            self.acked.set()

    def _control(self, data: bytes) -> None:
        try:
            message = json.loads(data)
        except ValueError:
            return
        if not isinstance(message, dict):
            return
        ack = message.get("ack")
        if isinstance(ack, int) and ack > 0:
            self.in_flight = max(0, self.in_flight - ack)
            self.acked.set()
            return
        if message.get("eof") and STDOUT in self.outputs:
            self.outputs[STDOUT].end()  # after the data before it: frames keep their order
            return
        try:
            self.controls.put_nowait(message)
        except asyncio.QueueFull:
            self._violated("sent more control messages than a request has")

    @staticmethod
    def _violated(why: str) -> None:
        # What the sandbox sends is untrusted: a helper that ignores its bounds costs this
        # request (closed, so its further frames are dropped), never the host's memory.
        raise HelperLost(f"the session helper {why}")

    async def deliver(self, channel: int, sink: Any) -> None:
        """Hand one channel's output to `sink`, giving the helper credit back as it goes."""
        output = self.outputs[channel]
        owed = 0
        while (data := await output.get()) is not None:
            await sink(data)
            owed += len(data)
            # Credit in batches (a frame per chunk would double the frames), but at once when
            # nothing more is queued: the helper may be waiting for it.
            if owed >= flow.WINDOW // 4 or not output.chunks:
                await self.tell(flow.grant(channel, owed))
                owed = 0

    async def tell(self, payload: bytes) -> None:
        """One input payload (tag + body) to the helper's side of this request."""
        if self.result is not None or self.error is not None:
            return
        with anyio.fail_after(SEND_TIMEOUT):
            await self.call.send(payload, channel=0)

    async def feed(self, source: bytes | AsyncIterable[bytes]) -> None:
        """Send `source` as input within the window, then its end."""
        chunks: AsyncIterable[bytes] = _once(source) if isinstance(source, bytes) else source
        async for chunk in chunks:
            view = memoryview(chunk)
            while view:
                piece = bytes(view[:flow.CHUNK])
                view = view[flow.CHUNK:]
                while self.in_flight + len(piece) > flow.WINDOW and self.in_flight:
                    if self.result is not None or self.error is not None:
                        return
                    self.acked.clear()
                    await self.acked.wait()
                if self.result is not None or self.error is not None:
                    return
                self.in_flight += len(piece)
                await self.tell(flow.INPUT + piece)
        await self.tell(flow.END)


async def _once(data: bytes) -> AsyncIterable[bytes]:
    yield data


class HelperCommand(RunningCommand):
    """A command the session helper runs: an `exec` request on its stream."""

    def __init__(self, sandbox: DockerSandbox, call: Call, spec: SpawnSpec) -> None:
        self._sandbox = sandbox
        self._spec = spec
        self._stream = _Stream(call, (STDOUT, STDERR))
        self._killed = False
        self._signalled = False
        self.pid: int | None = None
        self._pid_known = asyncio.Event()
        self._pump = asyncio.ensure_future(self._stream.pump())
        self._tasks = [
            asyncio.ensure_future(self._stream.deliver(STDOUT, spec.stdout)),
            asyncio.ensure_future(self._stream.deliver(STDERR, spec.stderr)),
            asyncio.ensure_future(self._controls()),
        ]
        self._feeder: asyncio.Future[None] | None = None
        if spec.stdin is not None:
            self._feeder = asyncio.ensure_future(self._stream.feed(spec.stdin))
        self._done = asyncio.ensure_future(self._finish())

    async def _controls(self) -> None:
        while True:
            message = await self._stream.controls.get()
            if isinstance(message.get("pid"), int):
                self.pid = message["pid"]
                self._pid_known.set()
            elif message.get("kill") == "eperm":
                # The group runs as another user (through sudo): end it as root.
                await self._kill_as_root()

    async def _kill_as_root(self) -> None:
        if self.pid is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._sandbox.kill_group(self.pid), DRAIN_AFTER_KILL)

    async def _finish(self) -> int:
        what = f"docker exec {self._spec.display!r}"
        try:
            await self._sandbox.while_alive(asyncio.shield(self._pump), what)
            await asyncio.gather(*self._tasks[:2])
        except HelperLost as exc:
            if self._killed or engine_of(self._sandbox).closed:
                # Ended on purpose (a kill, the sandbox's close, whose sweep takes the helper
                # with every command): what any killed command reports.
                return KILLED
            raise ConnectionLostError(
                f"{what}: the session helper carrying this command was lost ({exc}); its "
                "processes were ended. The next call starts the helper again (or runs through "
                "docker exec)",
                provider=PROVIDER, sandbox=self._sandbox.name,
            ) from None  # fmt: skip
        except asyncio.CancelledError:
            if not self._killed:
                raise
        finally:
            self._stop_tasks()
            if self._stream.result is None:
                # Given up before its RESULT (helper lost or misbehaving, container paused, a
                # kill it did not answer): closed, so the session drops its further frames
                # instead of waiting for a reader here, and the helper is told to end it.
                with anyio.CancelScope(shield=True):
                    await self._stream.call.aclose()
        result = self._stream.result or {}
        code = result.get("code")
        if not isinstance(code, int) and self._killed and self._stream.result is None:
            return KILLED  # given up after a kill the helper did not answer (kill())
        if not isinstance(code, int):
            raise ProviderError(f"{what}: the session helper could not run it: "
                                f"{str(result.get('error', 'no exit status'))[-2000:]}",
                                provider=PROVIDER, sandbox=self._sandbox.name)
        return code

    def _stop_tasks(self) -> None:
        if self._feeder is not None and not self._feeder.done():
            self._feeder.cancel()  # nobody reads the rest of stdin
        self._tasks[2].cancel()
        if not self._pump.done():
            self._pump.cancel()

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def signal_group(self) -> None:
        self._killed = True
        if self._done.done() or self._signalled:
            return
        self._signalled = True
        try:
            await self._stream.tell(flow.KILL)
        except (SessionError, TimeoutError):
            await self._kill_as_root()  # the helper cannot: docker exec -u 0 can

    async def kill(self) -> None:
        self._killed = True
        if self._done.done():
            return
        await self.signal_group()
        try:
            await asyncio.wait_for(asyncio.shield(self._done), DRAIN_AFTER_KILL)
        except TimeoutError:
            # The helper does not answer (stopped, or its stream stalled) or a sink never
            # returns: end the group from outside and give the call up.
            await self._kill_as_root()
            for task in [*self._tasks, self._pump]:
                task.cancel()
            with anyio.CancelScope(shield=True):
                await self._stream.call.aclose()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(asyncio.shield(self._done), DRAIN_AFTER_KILL)
        except Exception:
            pass  # reported by wait()


async def spawn(sandbox: DockerSandbox, spec: SpawnSpec) -> HelperCommand | None:
    """Start `spec` over the helper; None when the helper is off or cannot start (then the
    caller runs it through `docker exec`: nothing has started)."""
    from .sandbox import split_env

    passed, exported = split_env(spec.env)
    line = _shell.render(spec.argv, cwd=spec.cwd, env=exported, sudo=spec.sudo)
    # `docker exec` starts in the container's working directory: the worktree for a
    # container sandlot made without a user (docker run --workdir), else the image's.
    made_here = sandbox.options.attach is None and not sandbox.options.user
    args = {"line": line, "env": passed, "stdin": spec.stdin is not None, "window": flow.WINDOW,
            "start_dir": sandbox.options.workdir if made_here else "/"}
    try:
        call = await session_of(sandbox).open("exec", args)
    except SessionError as exc:
        log.debug("sandbox %s: %s; docker exec instead", sandbox.name, exc)
        return None
    return HelperCommand(sandbox, call, spec)


async def forward(
    sandbox: DockerSandbox, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
) -> bool:
    """Carry one forwarded connection over the helper; False when the helper is off (the
    caller relays it through a `docker exec` instead)."""
    args = {"host": remote_host, "port": remote_port, "window": flow.WINDOW}
    try:
        call = await session_of(sandbox).open("connect", args)
    except SessionError:
        return False
    stream = _Stream(call, (STDOUT,))

    async def upstream() -> AsyncIterable[bytes]:
        while True:
            try:
                data = await client.receive(flow.CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            yield data

    async def downstream(data: bytes) -> None:
        await client.send(data)

    async def down_then_eof() -> None:
        await stream.deliver(STDOUT, downstream)
        with contextlib.suppress(Exception):
            await client.send_eof()  # the sandbox's side stopped sending: half-close

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(stream.feed, upstream())
            down = asyncio.ensure_future(down_then_eof())
            try:
                await stream.pump()
                await down  # every byte to the client before the connection ends
            finally:
                down.cancel()
            group.cancel_scope.cancel()
    except BaseException:
        # Closed first: a peer that never reads would hold a send (and the call's end) up.
        with anyio.CancelScope(shield=True):
            await client.aclose()
            await call.aclose()
        raise
    await call.aclose()
    return True
