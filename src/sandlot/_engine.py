"""The execution engine below `Sandbox`: one command from spec to result, and the commands
a sandbox has running.

What is here: the spec a backend receives (`SpawnSpec`), the command it returns
(`RunningCommand`), the run marks that find a command's escaped processes (`_MarkedCommand`),
the silence limit (`Silence`), the wait with its limits (`await_exit`), result building
(`build_result`, `ExecResult`), and `Engine`: a sandbox's set of running commands and
forwards, its open/closed state and its marks, with ONE primitive, `Engine.run` (spawn,
track, await, untrack), that `Sandbox.exec`, `transfer`, and the toolbox runner all use.

Imports run one way (adr/0039): this module imports nothing from `sandbox`, `backends`, or
anything above them. It reaches the backend only through `Backend`, the hooks of
backends/contract.py that the engine itself calls; `transfer`, `forward`, `tools.runner` and
`processes` reach it through `engine_of(sandbox)`, never through `Sandbox`'s private members.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, Literal, Protocol

import anyio

from . import _run_marks, _shell
from .errors import ArgumentsTooLongError, CommandFailed, CommandTimedOut, SandboxClosed
from .output import OutputCapture
from .secrets.registry import GLOBAL, SecretSet

ByteSink = Callable[[bytes], Awaitable[None]]
StdinSource = bytes | AsyncIterable[bytes] | None
LineCallback = Callable[[str], None]

DEFAULT_MAX_OUTPUT = 8 << 20

log = logging.getLogger("sandlot")

#: Linux's limit on one argument (MAX_ARG_STRLEN), which the rendered `sh -c` line must respect.
MAX_LINE = 128 << 10

#: Seconds one search for a command's leftover processes may take (remote: one round trip).
SWEEP_TIMEOUT = 30.0


@dataclass(frozen=True)
class ExecResult:
    """What a finished command produced. Output is the captured (bounded) tail of each stream."""

    command: str
    exit_code: int
    stdout: str
    stderr: str
    duration: float
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out_by: Literal["timeout", "idle_timeout"] | None = None
    """Which limit ended the command when `timed_out`: the whole run's, or the silence one."""

    @property
    def truncated(self) -> bool:
        return self.stdout_truncated or self.stderr_truncated

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def check(self) -> ExecResult:
        """Return self when the command succeeded, else raise a typed `CommandError`."""
        if self.timed_out:
            why = (
                "produced no output for its idle_timeout"
                if self.timed_out_by == "idle_timeout" else "timed out"
            )
            raise CommandTimedOut(
                f"command {why} (ended after {self.duration:.1f}s): {self.command}",
                command=self.command,
                exit_code=self.exit_code,
                stderr=self.stderr,
            )
        if self.exit_code != 0:
            raise CommandFailed(
                f"command exited with status {self.exit_code}: {self.command}",
                command=self.command,
                exit_code=self.exit_code,
                stderr=self.stderr,
            )
        return self


@dataclass
class SpawnSpec:
    """One command as a backend receives it: already validated and rendered."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    sudo: bool
    stdin: StdinSource
    stdout: ByteSink
    stderr: ByteSink
    display: str = ""
    extra: dict[str, object] = field(default_factory=dict)

    def shell_line(self, *, announce_pid: bool = False, inline: bool = True) -> str:
        return _shell.render(
            self.argv, cwd=self.cwd, env=self.env, sudo=self.sudo, announce_pid=announce_pid,
            inline=inline,
        )


@dataclass
class InteractiveSpec:
    """One command wired to the caller's own streams (`Sandbox.interactive`), as a backend
    receives it: validated, its run mark already in `env`."""

    argv: list[str]
    cwd: str
    env: dict[str, str]
    stdin: BinaryIO
    stdout: BinaryIO
    stderr: BinaryIO
    tty: bool

    def shell_line(self) -> str:
        return _shell.render(self.argv, cwd=self.cwd, env=self.env)


class RunningCommand(ABC):
    """A started command, as a backend tracks it."""

    @abstractmethod
    async def wait(self) -> int:
        """Exit code, once the process ended AND its output was fully delivered to the sinks.

        Must be safe to call again after a cancelled call, and must return within a few seconds
        after `kill()` even if a detached grandchild still holds the pipes open.
        """

    @abstractmethod
    async def kill(self) -> None:
        """End the command's whole process tree. Idempotent; harmless after exit."""

    async def signal_group(self) -> None:
        """Send the kill to the command's process group without waiting for its output to end.

        A backend whose `kill()` then waits for the output (which a process that left the
        group may hold open) overrides this, so the sandbox can end those processes first;
        `kill()` after it does not signal again. The default is `kill()`.
        """
        await self.kill()


class _MarkedCommand(RunningCommand):
    """A backend's command plus its run mark: ending it also ends whatever it spawned that
    left its process group."""

    def __init__(self, inner: RunningCommand, engine: Engine, mark: str) -> None:
        self.inner = inner
        self.engine = engine
        self.mark = mark

    async def wait(self) -> int:
        return await self.inner.wait()

    async def kill(self) -> None:
        if not self.engine.backend._can_sweep():
            # The sandbox is unreachable (its connection dropped): a sweep would first wait to
            # reconnect, holding back the typed error the caller is owed. The agent ends the
            # command's group when its channel closes; close() sweeps what escaped.
            await self.inner.kill()
            return
        if self.engine.backend._sweep_before_kill:
            # Marked processes first: once none is left, nothing holds the output pipes and
            # the backend's own group kill and reaping finish at once.
            await self.engine.end_marked(self.mark)
            await self.inner.kill()
            return
        # The group first: a shell that wraps the command (a Coder agent's bash) must die with
        # it, not see its child killed and report "Killed" on the command's stderr. Only then
        # the marked processes, BEFORE waiting for the output to end: one that left the group
        # holds it open, and the wait would last its whole grace (a 1 s timeout took 6 s).
        await self.inner.signal_group()
        await self.engine.end_marked(self.mark)
        await self.inner.kill()


class Silence:
    """When either output stream last produced a byte, against an idle limit."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.last = anyio.current_time()

    def heard(self) -> None:
        self.last = anyio.current_time()


Fired = Literal["timeout", "idle_timeout"] | None


async def await_exit(
    running: RunningCommand, timeout: float | None, idle: Silence | None = None
) -> tuple[int, Fired]:
    """The exit code, and which limit (if any) ended the command's process tree first."""
    try:
        deadline = None if timeout is None else anyio.current_time() + timeout
        fired: Fired = None
        while fired is None:
            wake = deadline
            if idle is not None:
                quiet_until = idle.last + idle.limit
                wake = quiet_until if wake is None else min(wake, quiet_until)
            if wake is None:
                return await running.wait(), None
            with anyio.move_on_at(wake):
                return await running.wait(), None
            now = anyio.current_time()
            if deadline is not None and now >= deadline:
                fired = "timeout"
            elif idle is not None and now - idle.last >= idle.limit:
                fired = "idle_timeout"
            # else output came meanwhile: the silence starts again from it
        await running.kill()
        return await running.wait(), fired
    except BaseException:
        # Cancelled or failed while running: never leave the command behind.
        with anyio.CancelScope(shield=True):
            await running.kill()
        raise


def build_result(
    command: str,
    code: int,
    fired: Fired,
    out: OutputCapture,
    err: OutputCapture,
    started: float,
) -> ExecResult:
    out.close()
    err.close()
    for capture in (out, err):
        if capture.callback_error is not None:
            raise capture.callback_error
    return ExecResult(
        command=command,
        exit_code=code,
        stdout=out.text(),
        stderr=err.text(),
        duration=time.monotonic() - started,
        timed_out=fired is not None,
        stdout_truncated=out.truncated,
        stderr_truncated=err.truncated,
        timed_out_by=fired,
    )


async def discard(data: bytes) -> None:
    return None


def sink(capture: OutputCapture, silence: Silence | None) -> ByteSink:
    async def feed(data: bytes) -> None:
        if silence is not None and data:
            silence.heard()
        capture.feed(data)

    return feed


class Backend(Protocol):
    """What the engine calls on the sandbox above it: the backend hooks it drives
    (backends/contract.py lists them all, with their defaults)."""

    name: str
    provider: str
    worktree: str
    _sweep_before_kill: bool
    _session_helper: bool

    def _can_sweep(self) -> bool: ...

    async def _before_spawn(self) -> None: ...

    async def _spawn(self, spec: SpawnSpec) -> RunningCommand: ...

    async def _sweep(self, mark: str) -> None: ...

    async def _spawn_detached(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> None: ...


class Engine:
    """One sandbox's commands: whether it is open, what runs in it, and how it is ended."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.closed = False
        self.running: set[RunningCommand] = set()
        self.forwards: set[anyio.CancelScope] = set()
        self.run_mark = _run_marks.new_sandbox_mark()
        #: The secrets this sandbox was given: what its exit points scrub (sandlot.secrets).
        self.secrets = SecretSet(parent=GLOBAL)
        self._run_numbers = itertools.count(1)

    @property
    def name(self) -> str:
        return self.backend.name

    def ensure_open(self) -> None:
        if self.closed:
            raise SandboxClosed(
                f"sandbox {self.backend.name!r} ({self.backend.provider}) is closed; create a "
                "new one with provider.session() or provider.create()"
            )

    @property
    def session_helper(self) -> bool:
        """Whether sandlot's own operations may use the sandbox's session helper (adr/0042)."""
        return self.backend._session_helper

    def next_mark(self) -> str:
        return _run_marks.command_mark(self.run_mark, next(self._run_numbers))

    @property
    def durable_mark(self) -> str:
        return _run_marks.durable_mark(self.backend.provider, self.backend.name,
                                       self.backend.worktree)

    # ---- the primitive ----------------------------------------------------------------------

    async def run(
        self, spec: SpawnSpec, *, timeout: float | None = None, silence: Silence | None = None
    ) -> tuple[int, Fired]:
        """Run `spec` to its end: spawn, track, wait within the limits, untrack. The exit code,
        and which limit (if any) ended it. Every run-to-completion caller goes through here."""
        running = await self.spawn(spec)
        if silence is not None:
            silence.heard()  # the silence is counted from the start, not from before it
        try:
            return await await_exit(running, timeout, silence)
        finally:
            self.running.discard(running)

    async def spawn(self, spec: SpawnSpec) -> RunningCommand:
        """Start `spec` marked and tracked (ended at close); `untrack` it once it ended."""
        mark = self.next_mark()
        spec.env = {**spec.env, _run_marks.RUN_ENV: mark}
        # The longer of the two forms a backend may run (see _shell.render's `inline`).
        line = spec.shell_line(announce_pid=True, inline=False)
        size = len(line.encode("utf-8", "surrogateescape"))
        if size >= MAX_LINE:
            # Every backend runs the command as ONE `sh -c` argument, and Linux refuses a
            # single argument over 128 KiB (E2BIG) -- locally, in docker exec and over SSH.
            raise ArgumentsTooLongError(
                f"the command line is {size} bytes; one command may be at most "
                f"{MAX_LINE - 1} bytes (a single argument on Linux): pass large input through "
                "stdin= or a file copied in with copy_in"
            )
        running = _MarkedCommand(await self._spawn_whole(spec, mark), self, mark)
        self.running.add(running)
        return running

    def untrack(self, running: RunningCommand) -> None:
        self.running.discard(running)

    async def spawn_unmarked(self, spec: SpawnSpec) -> RunningCommand:
        """The backend's own start, neither marked nor tracked: for a relay a forward owns
        (ended with its forward) and the default sweep (which must not hold a mark)."""
        return await self.backend._spawn(spec)

    async def spawn_detached(self, argv: list[str], *, cwd: str, env: dict[str, str]) -> None:
        """Start `argv` detached from every command (the backend's `_spawn_detached`)."""
        await self.backend._spawn_detached(argv, cwd=cwd, env=env)

    async def _spawn_whole(self, spec: SpawnSpec, mark: str) -> RunningCommand:
        """`_spawn`, which a cancel cannot cut in half.

        A cancel that lands while a backend starts a command would abandon a command that has
        begun: asyncio kills only the direct child of a cancelled create_subprocess_exec (its
        children live on), and a `docker exec` or SSH channel cut mid-start may still start
        the command after the caller gave up on it. So the start runs to its end in a task of
        its own, and a cancel meanwhile ends the started command's whole tree (group and run
        mark) before it is raised. A start that does not finish within `SWEEP_TIMEOUT` after
        the cancel is cancelled itself; whatever of it began is then found by its mark.
        """
        await self.backend._before_spawn()  # nothing has started: a cancel here cuts it short
        starting = asyncio.ensure_future(self.backend._spawn(spec))
        try:
            return await asyncio.shield(starting)
        except asyncio.CancelledError:
            with anyio.CancelScope(shield=True):
                await self._end_half_started(starting, mark)
            raise

    async def _end_half_started(self, starting: asyncio.Future[RunningCommand], mark: str) -> None:
        done, _ = await asyncio.wait([starting], timeout=SWEEP_TIMEOUT)
        if not done:
            starting.cancel()
            with contextlib.suppress(BaseException):
                await starting
        if starting.cancelled() or starting.exception() is not None:
            if self.backend._can_sweep():  # else close() finds what began, as after any kill
                await self.end_marked(mark)
            return
        with contextlib.suppress(Exception):  # the cancel is what the caller is owed
            await _MarkedCommand(starting.result(), self, mark).kill()

    # ---- ending -----------------------------------------------------------------------------

    async def end_marked(self, mark: str) -> None:
        """End every process holding `mark` (a command's, or the sandbox's for all of them).
        Failures are logged, not raised: this runs while something else is being ended."""
        try:
            with anyio.fail_after(SWEEP_TIMEOUT):
                await self.backend._sweep(mark)
        except Exception as exc:
            log.warning("sandbox %s: could not search for leftover processes of %s: %s",
                        self.backend.name, mark, exc)

    @contextlib.contextmanager
    def forward(self, scope: anyio.CancelScope) -> Iterator[None]:
        """Track a forward's scope while the block runs: closing the sandbox cancels it."""
        self.forwards.add(scope)
        try:
            yield
        finally:
            self.forwards.discard(scope)

    async def shutdown(self, *, end_durable: bool) -> None:
        """Close: cancel the forwards, end every process any command started (by the
        sandbox's mark, in one search; the durable ones too when `end_durable`), then each
        tracked command's own tree. Call it once, shielded."""
        self.closed = True
        for scope in list(self.forwards):
            scope.cancel()
        await self.end_marked(self.run_mark)
        if end_durable:
            await self.end_marked(self.durable_mark)
        for running in list(self.running):
            inner = running.inner if isinstance(running, _MarkedCommand) else running
            # The backend's own close reports what matters.
            with contextlib.suppress(Exception):
                await inner.kill()
        self.running.clear()


class _HasEngine(Protocol):
    _engine: Engine


def engine_of(sandbox: _HasEngine) -> Engine:
    """The engine below `sandbox`: the one way sandlot's own modules reach it."""
    return sandbox._engine
