"""The `Sandbox` interface every backend implements, and what its methods return.

The public methods here hold the whole contract (validation, timeouts, bounded capture, closing);
a backend only supplies `_spawn` (start one shell line with piped stdio), `_interactive` and
`_close`. Copies are tar streams over `_spawn` unless a backend has something better.

Contract (checked by tests/contract on every backend):

* `command` as a string runs under `sh -c`; as a sequence it is quoted by sandlot.
* `on_stdout` / `on_stderr` are called line by line WHILE the command runs. Streaming is not
  optional: a backend that buffers until exit breaks it.
* `stdin` is written and then closed: the command sees EOF.
* `env` keys are POSIX names (else `InvalidEnvError`); values may hold any character.
* `timeout` ends the command's whole process tree; the result has `timed_out=True` and keeps
  the output so far. `idle_timeout` does the same when neither stream produced a byte for
  that long; `timed_out_by` says which of the two fired. Nothing keeps running: processes
  that left the command's process group (`setsid`, double forks) are found by the command's
  run mark (_run_marks.py) and ended too.
* `close()` ends every process any command of the sandbox started, by the sandbox's run mark,
  whatever its `on_close`.
* Captured output is bounded by `max_output` bytes per stream (`*_truncated` set, the tail is
  kept); callbacks still see every line.
* A process ended by a signal reports `128 + signal` as its exit code, as a shell would.
* After `close()`, every call raises `SandboxClosed`; `close()` itself is idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, Literal

import anyio
import anyio.abc

from . import _run_marks, _shell

if TYPE_CHECKING:
    from .forward import ForwardAddress
    from .processes import DurableProcesses
from .errors import (
    ArgumentsTooLongError,
    CommandFailed,
    CommandTimedOut,
    ConfigurationError,
    HostPathNotFoundError,
    SandboxClosed,
)
from .output import OutputCapture

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

    def __init__(self, inner: RunningCommand, sandbox: Sandbox, mark: str) -> None:
        self.inner = inner
        self.sandbox = sandbox
        self.mark = mark

    async def wait(self) -> int:
        return await self.inner.wait()

    async def kill(self) -> None:
        if not self.sandbox._can_sweep():
            # The sandbox is unreachable (its connection dropped): a sweep would first wait to
            # reconnect, holding back the typed error the caller is owed. The agent ends the
            # command's group when its channel closes; close() sweeps what escaped.
            await self.inner.kill()
            return
        if self.sandbox._sweep_before_kill:
            # Marked processes first: once none is left, nothing holds the output pipes and
            # the backend's own group kill and reaping finish at once.
            await self.sandbox._end_marked(self.mark)
            await self.inner.kill()
            return
        # The group first: a shell that wraps the command (a Coder agent's bash) must die with
        # it, not see its child killed and report "Killed" on the command's stderr. Only then
        # the marked processes, BEFORE waiting for the output to end: one that left the group
        # holds it open, and the wait would last its whole grace (a 1 s timeout took 6 s).
        await self.inner.signal_group()
        await self.sandbox._end_marked(self.mark)
        await self.inner.kill()


class Process:
    """A command running in the background (from `Sandbox.start`)."""

    def __init__(
        self,
        running: RunningCommand,
        out: OutputCapture,
        err: OutputCapture,
        *,
        command: str,
        timeout: float | None,
        idle: _Silence | None,
        on_done: Callable[[Process], None],
    ) -> None:
        self._running = running
        self._out = out
        self._err = err
        self.command = command
        self._started = time.monotonic()
        self._on_done = on_done
        self._result: ExecResult | None = None
        self._task = asyncio.ensure_future(self._supervise(timeout, idle))

    async def _supervise(self, timeout: float | None, idle: _Silence | None) -> ExecResult:
        try:
            code, fired = await _await_exit(self._running, timeout, idle)
            self._result = _build_result(
                self.command, code, fired, self._out, self._err, self._started
            )
            return self._result
        finally:
            self._on_done(self)

    @property
    def stdout(self) -> str:
        """Captured stdout so far (bounded tail)."""
        return self._out.text()

    @property
    def stderr(self) -> str:
        """Captured stderr so far (bounded tail)."""
        return self._err.text()

    @property
    def done(self) -> bool:
        return self._task.done()

    @property
    def exit_code(self) -> int | None:
        return self._result.exit_code if self._result is not None else None

    async def wait(self) -> ExecResult:
        """Wait for the command to end; cancelling this wait does not stop the command."""
        return await asyncio.shield(self._task)

    async def kill(self) -> ExecResult:
        """End the command's whole process tree and return what it produced."""
        if not self._task.done():
            await self._running.kill()
        return await self.wait()


class _Silence:
    """When either output stream last produced a byte, against an idle limit."""

    def __init__(self, limit: float) -> None:
        self.limit = limit
        self.last = anyio.current_time()

    def heard(self) -> None:
        self.last = anyio.current_time()


Fired = Literal["timeout", "idle_timeout"] | None


async def _await_exit(
    running: RunningCommand, timeout: float | None, idle: _Silence | None = None
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


def _build_result(
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


async def _discard(data: bytes) -> None:
    return None


def _sink(capture: OutputCapture, silence: _Silence | None) -> ByteSink:
    async def feed(data: bytes) -> None:
        if silence is not None and data:
            silence.heard()
        capture.feed(data)

    return feed


class Sandbox(ABC):
    """An isolated place to run commands, with a worktree directory inside it."""

    provider: str
    worktree: str
    #: Whether ending a command searches for its marked processes before the backend's own
    #: group kill (see _MarkedCommand.kill).
    _sweep_before_kill = False

    def __init__(self, *, provider: str, worktree: str, name: str) -> None:
        self.provider = provider
        self.worktree = _shell.validate_sandbox_path(worktree, "worktree")
        self.name = name
        self._closed = False
        self._running: set[RunningCommand] = set()
        self._forwards: set[anyio.CancelScope] = set()
        self._close_lock = anyio.Lock()
        self._run_mark = _run_marks.new_sandbox_mark()
        self._run_numbers = itertools.count(1)
        self._processes: DurableProcesses | None = None

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {self.name!r} worktree={self.worktree!r} {state}>"

    @property
    def closed(self) -> bool:
        return self._closed

    def _ensure_open(self) -> None:
        if self._closed:
            raise SandboxClosed(
                f"sandbox {self.name!r} ({self.provider}) is closed; create a new one with "
                "provider.session() or provider.create()"
            )

    # ---- running commands -------------------------------------------------------------------

    def _prepare(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, str] | None,
        stdin: str | bytes | None,
        sudo: bool,
        timeout: float | None,
        idle_timeout: float | None,
        max_output: int,
        on_stdout: LineCallback | None,
        on_stderr: LineCallback | None,
    ) -> tuple[SpawnSpec, OutputCapture, OutputCapture, _Silence | None]:
        self._ensure_open()
        argv = _shell.to_argv(command)
        checked_env = _shell.validate_env(env)
        workdir = _shell.validate_sandbox_path(cwd, "cwd") if cwd is not None else self.worktree
        _shell.validate_seconds(timeout, "timeout")
        _shell.validate_seconds(idle_timeout, "idle_timeout")
        silence = _Silence(idle_timeout) if idle_timeout is not None else None
        if not isinstance(max_output, int) or max_output < 0:
            raise ConfigurationError(f"max_output must be an int >= 0, got {max_output!r}")
        if isinstance(stdin, str):
            stdin = stdin.encode()
        elif stdin is not None and not isinstance(stdin, bytes | bytearray | memoryview):
            raise ConfigurationError(
                f"stdin must be str, bytes or None, got {type(stdin).__name__}"
            )
        out = OutputCapture(max_output, on_stdout)
        err = OutputCapture(max_output, on_stderr)
        spec = SpawnSpec(
            argv=argv,
            cwd=workdir,
            env=checked_env,
            sudo=sudo,
            stdin=bytes(stdin) if stdin is not None else None,
            stdout=_sink(out, silence),
            stderr=_sink(err, silence),
            display=_shell.display(argv),
        )
        return spec, out, err, silence

    def _next_mark(self) -> str:
        return _run_marks.command_mark(self._run_mark, next(self._run_numbers))

    async def _spawn_tracked(self, spec: SpawnSpec) -> RunningCommand:
        mark = self._next_mark()
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
        self._running.add(running)
        return running

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
        await self._before_spawn()  # nothing has started yet: a cancel here cuts it short
        starting = asyncio.ensure_future(self._spawn(spec))
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
            if self._can_sweep():  # else close() finds what began, as after any kill
                await self._end_marked(mark)
            return
        with contextlib.suppress(Exception):  # the cancel is what the caller is owed
            await _MarkedCommand(starting.result(), self, mark).kill()

    @property
    def processes(self) -> DurableProcesses:
        """Durable processes: detached commands any program attached to this sandbox can
        reattach to (see `sandlot.processes`)."""
        if self._processes is None:
            from .processes import DurableProcesses

            self._processes = DurableProcesses(self)
        return self._processes

    @property
    def _durable_mark(self) -> str:
        return _run_marks.durable_mark(self.provider, self.name, self.worktree)

    async def _spawn_detached(
        self, argv: list[str], *, cwd: str, env: dict[str, str]
    ) -> None:
        """Backend hook: start `argv` in a session of its own, detached from every command and
        from this program. It may return before `argv` runs: the caller waits for a sign of
        life from it (the durable supervisor's `detached` file). The default starts it from a
        command that returns at once (its processes outlive the command on every backend)."""
        result = await self.exec(
            ["sh", "-c", '( setsid "$@" </dev/null >/dev/null 2>&1 & )', "sandlot-detach",
             *argv],
            cwd=cwd, env=env,
        )
        result.check()

    def _close_ends_durable(self) -> bool:
        """Backend hook: whether close() must end the durable processes itself (the sandbox
        goes away, but they would outlive it on this backend)."""
        return False

    def _can_sweep(self) -> bool:
        """Backend hook: whether a sweep can run now without first reconnecting."""
        return True

    async def _before_spawn(self) -> None:
        """Backend hook: what `_spawn` waits for before anything starts (a reconnect), done
        first where a cancel may still cut it short (the start itself runs to its end)."""
        return None

    async def _end_marked(self, mark: str) -> None:
        """End every process holding `mark` (a command's, or the sandbox's for all of them).
        Failures are logged, not raised: this runs while something else is being ended."""
        try:
            with anyio.fail_after(SWEEP_TIMEOUT):
                await self._sweep(mark)
        except Exception as exc:
            log.warning("sandbox %s: could not search for leftover processes of %s: %s",
                        self.name, mark, exc)

    async def _sweep(self, mark: str) -> None:
        """Backend hook: kill every process in the sandbox whose environment holds `mark`
        (`_run_marks.grep_pattern`). The default runs the sweep script as a command."""
        spec = SpawnSpec(
            argv=["sh", "-c", _run_marks.SWEEP_SCRIPT, "sh", _run_marks.grep_pattern(mark)],
            cwd="/",
            env={},
            sudo=False,
            stdin=None,
            stdout=_discard,
            stderr=_discard,
            display="sandlot: end leftover processes",
        )
        running = await self._spawn(spec)
        try:
            await running.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await running.kill()

    async def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
        check: bool = False,
    ) -> ExecResult:
        """Run a command to completion and return its exit code and (bounded) output.

        `cwd` defaults to the worktree; `timeout` bounds the whole run, `idle_timeout` the time
        without a byte on stdout or stderr; `check=True` raises `CommandFailed` /
        `CommandTimedOut` instead of returning a failed result.
        """
        spec, out, err, silence = self._prepare(
            command,
            cwd=cwd,
            env=env,
            stdin=stdin,
            sudo=sudo,
            timeout=timeout,
            idle_timeout=idle_timeout,
            max_output=max_output,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
        )
        started = time.monotonic()
        running = await self._spawn_tracked(spec)
        if silence is not None:
            silence.heard()  # the silence is counted from the start, not from before it
        try:
            code, fired = await _await_exit(running, timeout, silence)
        finally:
            self._running.discard(running)
        result = _build_result(spec.display, code, fired, out, err, started)
        return result.check() if check else result

    async def start(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
    ) -> Process:
        """Start a command in the background; read, wait for or kill it through the `Process`.
        `timeout` and `idle_timeout` end it as they end `exec`'s command."""
        spec, out, err, silence = self._prepare(
            command,
            cwd=cwd,
            env=env,
            stdin=stdin,
            sudo=sudo,
            timeout=timeout,
            idle_timeout=idle_timeout,
            max_output=max_output,
            on_stdout=on_stdout,
            on_stderr=on_stderr,
        )
        running = await self._spawn_tracked(spec)
        if silence is not None:
            silence.heard()
        return Process(
            running,
            out,
            err,
            command=spec.display,
            timeout=timeout,
            idle=silence,
            on_done=lambda _p: self._running.discard(running),
        )

    async def interactive(
        self,
        argv: Sequence[str],
        *,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        tty: bool | None = None,
    ) -> int:
        """Run a command wired to the given streams (default: this process's stdio).

        `tty=None` asks for a PTY exactly when `stdin` is a terminal. Returns the exit code.
        """
        self._ensure_open()
        args = _shell.to_argv(argv)
        checked_env = _shell.validate_env(env)
        workdir = _shell.validate_sandbox_path(cwd, "cwd") if cwd is not None else self.worktree
        stdin = stdin if stdin is not None else sys.stdin.buffer
        stdout = stdout if stdout is not None else sys.stdout.buffer
        stderr = stderr if stderr is not None else sys.stderr.buffer
        if tty is None:
            try:
                tty = os.isatty(stdin.fileno())
            except (OSError, ValueError, AttributeError):
                tty = False
        return await self._interactive(
            args,
            cwd=workdir,
            env={**checked_env, _run_marks.RUN_ENV: self._next_mark()},
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            tty=tty,
        )

    # ---- ports ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def forward_port(
        self, remote_port: int, *, local_port: int = 0, remote_host: str = "127.0.0.1"
    ) -> AsyncIterator[ForwardAddress]:
        """Reach `remote_host:remote_port` inside the sandbox from this host.

        Yields the host address (`addr.host`, `addr.port`, `addr.url`; `local_port=0` lets the
        OS choose) where TCP connections are carried to the sandbox's port until the block
        ends or the sandbox closes. Any number of forwards and connections at once; a
        connection to a port nothing listens on is closed and the forward goes on.
        """
        from .forward import check_target, forwarding

        self._ensure_open()
        check_target(remote_port, local_port, remote_host)
        await self._forward_preflight()
        async with forwarding(self, remote_port, local_port=local_port,
                              remote_host=remote_host) as address:
            yield address

    async def _forward_preflight(self) -> None:
        """Backend hook: fail before listening when forwarding cannot work (the default
        relay needs python3, socat, nc or busybox in the sandbox)."""
        from .forward import PROBE_SCRIPT, RELAY_MISSING, ForwardRelayMissingError

        found = await self.exec(["sh", "-c", PROBE_SCRIPT], timeout=60)
        if found.exit_code != 0:
            raise ForwardRelayMissingError(RELAY_MISSING)

    async def _forward_connection(
        self, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
    ) -> None:
        """Backend hook: carry one accepted connection to the sandbox's port until either
        side closes. The default starts a relay program in the sandbox (forward.py)."""
        from .forward import relay_through_command

        await relay_through_command(self, client, remote_host, remote_port)

    # ---- files ----------------------------------------------------------------------------

    async def copy_in(self, host_path: str | os.PathLike[str], sandbox_path: str) -> None:
        """Copy a host file to exactly `sandbox_path`, or a directory's CONTENTS into it.

        Modes are kept; parents are created; a copied file appears whole or not at all.
        """
        self._ensure_open()
        source = Path(host_path)
        if not source.exists():
            raise HostPathNotFoundError(
                f"copy_in: host path does not exist: {str(source)!r}; check the path "
                "(relative paths resolve against the current directory)"
            )
        dest = _shell.validate_sandbox_path(sandbox_path, "copy_in destination")
        await self._copy_in(source, dest)

    async def copy_out(self, sandbox_path: str, host_path: str | os.PathLike[str]) -> None:
        """Copy a sandbox file to exactly `host_path` (or a directory's contents into it).

        Parents are created; the host destination appears whole or not at all.
        """
        self._ensure_open()
        source = _shell.validate_sandbox_path(sandbox_path, "copy_out source")
        await self._copy_out(source, Path(host_path))

    async def _copy_in(self, source: Path, dest: str) -> None:
        """Backend hook with validated arguments; the default is the staged tar stream."""
        from .transfer import copy_in

        await copy_in(self, source, dest)

    async def _copy_out(self, source: str, host: Path) -> None:
        """Backend hook with validated arguments; the default is the staged tar stream."""
        from .transfer import copy_out

        await copy_out(self, source, host)

    # ---- lifecycle --------------------------------------------------------------------------

    async def close(self) -> None:
        """End every running command and release the sandbox (as its `on_close` says).

        Idempotent: a second call does nothing.
        """
        async with self._close_lock:
            if self._closed:
                return
            self._closed = True
            for forward in list(self._forwards):
                forward.cancel()
            with anyio.CancelScope(shield=True):
                # Everything any command started, by the sandbox's mark, in one search.
                await self._end_marked(self._run_mark)
                if self._close_ends_durable():
                    await self._end_marked(self._durable_mark)
                for running in list(self._running):
                    inner = running.inner if isinstance(running, _MarkedCommand) else running
                    # The backend's own close reports what matters.
                    with contextlib.suppress(Exception):
                        await inner.kill()
                self._running.clear()
                await self._close()

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- what a backend implements ---------------------------------------------------------

    @abstractmethod
    async def _spawn(self, spec: SpawnSpec) -> RunningCommand:
        """Start `spec` (stdin streamed then closed; stdout/stderr bytes to the sinks)."""

    @abstractmethod
    async def _interactive(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        stdin: BinaryIO,
        stdout: BinaryIO,
        stderr: BinaryIO,
        tty: bool,
    ) -> int:
        """Run `argv` wired to the given streams, with a PTY when `tty`."""

    @abstractmethod
    async def _close(self) -> None:
        """Release the backend's resources, applying its `on_close` policy."""
