"""The `Sandbox` interface every backend implements, and what its methods return.

The public methods here hold the whole contract (validation, timeouts, bounded capture, closing);
a backend only supplies `_spawn` (start one shell line with piped stdio), `_interactive` and
`_close`. Copies are tar streams over `_spawn` unless a backend has something better. Running
a command (spec, marks, limits, result) is the engine's job (_engine.py, below this module);
the hooks a backend owes or may override are listed in backends/contract.py.

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
import logging
import os
import socket
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.abc

from . import _run_marks, _shell, forward, telemetry, transfer
from ._engine import DEFAULT_MAX_OUTPUT as DEFAULT_MAX_OUTPUT
from ._engine import MAX_LINE as MAX_LINE
from ._engine import SWEEP_TIMEOUT as SWEEP_TIMEOUT
from ._engine import ByteSink as ByteSink
from ._engine import Engine, Silence, await_exit, build_result, discard, sink
from ._engine import ExecResult as ExecResult
from ._engine import InteractiveSpec as InteractiveSpec
from ._engine import LineCallback as LineCallback
from ._engine import RunningCommand as RunningCommand
from ._engine import SpawnSpec as SpawnSpec
from ._engine import StdinSource as StdinSource
from .errors import (
    ConfigurationError,
    HostPathNotFoundError,
    NotSupportedError,
    SandboxPausedError,
)
from .forward import ForwardAddress
from .fswatch import FileWatch
from .output import OutputCapture
from .processes import DurableProcesses
from .secrets import EnvValue, SecretSet
from .snapshots import store as _snapshots
from .snapshots.models import Snapshot, SnapshotDiff

_log = logging.getLogger("sandlot")


def _retrieved(task: asyncio.Future[ExecResult]) -> None:
    if not task.cancelled():
        task.exception()


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
        idle: Silence | None,
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
        # A failure (a connection lost under a background command) is the caller's to see
        # in wait() or kill(); one nobody asked for must not surface later as "Task
        # exception was never retrieved" in whatever else the program's loop is running.
        self._task.add_done_callback(_retrieved)

    async def _supervise(self, timeout: float | None, idle: Silence | None) -> ExecResult:
        try:
            code, fired = await await_exit(self._running, timeout, idle)
            self._result = build_result(
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


class Sandbox(ABC):
    """An isolated place to run commands, with a worktree directory inside it."""

    provider: str
    worktree: str
    #: Whether ending a command searches for its marked processes before the backend's own
    #: group kill (see _MarkedCommand.kill).
    _sweep_before_kill = False
    #: Whether close() resumes a paused sandbox first (so its processes end as usual).
    _resume_before_close = False
    #: Whether sandlot's own operations (the file tools) may run in the sandbox's session
    #: helper (adr/0042); a provider's `session_helper=False` sets it False.
    _session_helper = True

    def __init__(self, *, provider: str, worktree: str, name: str) -> None:
        self.provider = provider
        self.worktree = _shell.validate_sandbox_path(worktree, "worktree")
        self.name = name
        #: The execution engine below this sandbox (_engine.py): what runs in it, its marks,
        #: whether it is open. Reached from other modules only through `_engine.engine_of`.
        self._engine = Engine(self)
        self._close_lock = anyio.Lock()
        self._processes: DurableProcesses | None = None
        telemetry.sandbox_opened(provider)
        #: Run once after the backend's close (a fork releasing its shared image, say); a
        #: failure is logged, not raised: the sandbox itself is closed by then.
        self._after_close: list[Callable[[], Awaitable[None]]] = []
        self._paused = False

    def __repr__(self) -> str:
        state = "closed" if self._engine.closed else "open"
        return f"<{type(self).__name__} {self.name!r} worktree={self.worktree!r} {state}>"

    def _span_attributes(self) -> dict[str, str]:
        return {"sandlot.sandbox.provider": self.provider, "sandlot.sandbox.name": self.name}

    @property
    def closed(self) -> bool:
        return self._engine.closed

    def _ensure_open(self) -> None:
        self._engine.ensure_open()

    # ---- running commands -------------------------------------------------------------------

    def _prepare(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None,
        env: Mapping[str, EnvValue] | None,
        stdin: str | bytes | None,
        sudo: bool,
        timeout: float | None,
        idle_timeout: float | None,
        max_output: int,
        on_stdout: LineCallback | None,
        on_stderr: LineCallback | None,
        scrub: bool = False,
    ) -> tuple[SpawnSpec, OutputCapture, OutputCapture, Silence | None]:
        self._ensure_open()
        self._ensure_running()
        argv = _shell.to_argv(command)
        checked_env = _shell.validate_env(self._engine.secrets.reveal_env(env))
        workdir = _shell.validate_sandbox_path(cwd, "cwd") if cwd is not None else self.worktree
        _shell.validate_seconds(timeout, "timeout")
        _shell.validate_seconds(idle_timeout, "idle_timeout")
        silence = Silence(idle_timeout) if idle_timeout is not None else None
        if not isinstance(max_output, int) or max_output < 0:
            raise ConfigurationError(f"max_output must be an int >= 0, got {max_output!r}")
        if isinstance(stdin, str):
            stdin = stdin.encode()
        elif stdin is not None and not isinstance(stdin, bytes | bytearray | memoryview):
            raise ConfigurationError(
                f"stdin must be str, bytes or None, got {type(stdin).__name__}"
            )
        scrubber = self._engine.secrets.scrubber if scrub else None
        out = OutputCapture(max_output, on_stdout, scrubber.stream() if scrubber else None)
        err = OutputCapture(max_output, on_stderr, scrubber.stream() if scrubber else None)
        spec = SpawnSpec(
            argv=argv,
            cwd=workdir,
            env=checked_env,
            sudo=sudo,
            stdin=bytes(stdin) if stdin is not None else None,
            stdout=sink(out, silence),
            stderr=sink(err, silence),
            display=scrubber.text(_shell.display(argv)) if scrubber else _shell.display(argv),
        )
        return spec, out, err, silence

    def watch(self, path: str = ".", *, recursive: bool = True, queue_size: int = 10_000,
              poll_interval: float = 0.5, force_poll: bool = False) -> FileWatch:
        """Changes under `path` (relative to the worktree, or absolute) as `FileEvent`s:
        `async for event in sandbox.watch("src")`, or `async with sandbox.watch(p) as w`
        to know the watches are set before changing anything. inotify inside the sandbox
        where it can, else polling every `poll_interval` s (`event.source` says which); at
        most `queue_size` events wait for the consumer, then an `overflow` event says how many
        were lost. It ends with its block, its `aclose()`, or this sandbox (adr/0052)."""
        return FileWatch(self, path, recursive=recursive, queue_size=queue_size,
                         poll_interval=poll_interval, force_poll=force_poll)

    @property
    def secrets(self) -> SecretSet:
        """The secrets this sandbox was given (every `Secret` passed to it so far); what
        `scrub=True` and sandlot's exit points (toolbox, MCP, server, fan-out) replace with
        `[secret:NAME]`. `sandbox.secrets.scrubber.text(s)` scrubs your own output."""
        return self._engine.secrets

    @property
    def processes(self) -> DurableProcesses:
        """Durable processes: detached commands any program attached to this sandbox can
        reattach to (see `sandlot.processes`)."""
        if self._processes is None:
            self._processes = DurableProcesses(self)
        return self._processes

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

    async def _sweep(self, mark: str) -> None:
        """Backend hook: kill every process in the sandbox whose environment holds `mark`
        (`_run_marks.grep_pattern`). The default runs `_run_marks.sweep_argv` as a command."""
        spec = SpawnSpec(
            argv=_run_marks.sweep_argv(mark),
            cwd="/",
            env={},
            sudo=False,
            stdin=None,
            stdout=discard,
            stderr=discard,
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
        env: Mapping[str, EnvValue] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
        check: bool = False,
        scrub: bool = False,
    ) -> ExecResult:
        """Run a command to completion and return its exit code and (bounded) output.

        `cwd` defaults to the worktree; `timeout` bounds the whole run, `idle_timeout` the time
        without a byte on stdout or stderr; `check=True` raises `CommandFailed` /
        `CommandTimedOut` instead of returning a failed result. `env` values may be `Secret`s.
        The result keeps the RAW output (the caller's own program asked for it); `scrub=True`
        replaces every secret this sandbox was given with `[secret:NAME]` in the result, the
        line callbacks and any error, across chunk and line boundaries.
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
            scrub=scrub,
        )
        program = telemetry.command_attributes(spec.argv, spec.display)
        with telemetry.span("sandlot.exec", {**self._span_attributes(), **program}) as current:
            telemetry.inject_traceparent(spec.env)
            started = time.monotonic()
            code, fired = await self._engine.run(spec, timeout=timeout, silence=silence)
            result = build_result(spec.display, code, fired, out, err, started)
            ended: dict[str, str | int | bool] = {"process.exit.code": code,
                                                  "sandlot.exec.timed_out": fired is not None}
            if fired is not None:
                ended["error.type"] = "timeout"
            telemetry.set_attributes(current, ended)
            # The metric's attributes are few-valued (a series per combination): not the
            # command's length, which the span has.
            telemetry.record_exec(result.duration, {
                "sandlot.sandbox.provider": self.provider,
                "process.executable.name": program["process.executable.name"]})
            return result.check() if check else result

    async def start(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: LineCallback | None = None,
        on_stderr: LineCallback | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
        scrub: bool = False,
    ) -> Process:
        """Start a command in the background; read, wait for or kill it through the `Process`.
        `timeout` and `idle_timeout` end it as they end `exec`'s command; `env` and `scrub`
        as `exec`'s."""
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
            scrub=scrub,
        )
        program = telemetry.command_attributes(spec.argv, spec.display)
        with telemetry.span("sandlot.start", {**self._span_attributes(), **program}):
            telemetry.inject_traceparent(spec.env)
            running = await self._engine.spawn(spec)
        if silence is not None:
            silence.heard()
        return Process(
            running,
            out,
            err,
            command=spec.display,
            timeout=timeout,
            idle=silence,
            on_done=lambda _p: self._engine.untrack(running),
        )

    async def interactive(
        self,
        argv: Sequence[str],
        *,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
        cwd: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        tty: bool | None = None,
    ) -> int:
        """Run a command wired to the given streams (default: this process's stdio).

        `tty=None` asks for a PTY exactly when `stdin` is a terminal. Returns the exit code.
        """
        self._ensure_open()
        args = _shell.to_argv(argv)
        checked_env = _shell.validate_env(self._engine.secrets.reveal_env(env))
        workdir = _shell.validate_sandbox_path(cwd, "cwd") if cwd is not None else self.worktree
        stdin = stdin if stdin is not None else sys.stdin.buffer
        stdout = stdout if stdout is not None else sys.stdout.buffer
        stderr = stderr if stderr is not None else sys.stderr.buffer
        if tty is None:
            try:
                tty = os.isatty(stdin.fileno())
            except (OSError, ValueError, AttributeError):
                tty = False
        return await self._interactive(InteractiveSpec(
            argv=args,
            cwd=workdir,
            env={**checked_env, _run_marks.RUN_ENV: self._engine.next_mark()},
            stdin=stdin,
            stdout=stdout,
            stderr=stderr,
            tty=tty,
        ))

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
        self._ensure_open()
        forward.check_target(remote_port, local_port, remote_host)
        await self._forward_preflight()
        async with forward.forwarding(self._engine, self._forward_connection, remote_port,
                                      local_port=local_port, remote_host=remote_host,
                                      handover=self._forward_handover) as address:
            yield address

    async def _forward_preflight(self) -> None:
        """Backend hook: fail before listening when forwarding cannot work (the default
        relay needs python3, socat, nc or busybox in the sandbox)."""
        found = await self.exec(["sh", "-c", forward.PROBE_SCRIPT], timeout=60)
        if found.exit_code != 0:
            raise forward.ForwardRelayMissingError(forward.RELAY_MISSING)

    async def _forward_handover(
        self, client: socket.socket, remote_host: str, remote_port: int
    ) -> bool:
        """Backend hook: take the accepted socket itself and carry the connection to its end
        (True), or leave it untouched (False) for `_forward_connection`. The default leaves
        it."""
        return False

    async def _forward_connection(
        self, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
    ) -> None:
        """Backend hook: carry one accepted connection to the sandbox's port until either
        side closes. The default starts a relay program in the sandbox (forward.py)."""
        await forward.relay_through_command(self._engine, client, remote_host, remote_port)

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
        with telemetry.span("sandlot.copy_in", self._span_attributes()) as current:
            await self._copy_in(source, dest)
            self._copied(current, source, "in")

    async def copy_out(self, sandbox_path: str, host_path: str | os.PathLike[str]) -> None:
        """Copy a sandbox file to exactly `host_path` (or a directory's contents into it).

        Parents are created; the host destination appears whole or not at all.
        """
        self._ensure_open()
        source = _shell.validate_sandbox_path(sandbox_path, "copy_out source")
        with telemetry.span("sandlot.copy_out", self._span_attributes()) as current:
            await self._copy_out(source, Path(host_path))
            self._copied(current, Path(host_path), "out")

    def _copied(self, current: telemetry.Span | None, host: Path, direction: str) -> None:
        """The files and bytes a copy moved, counted on the host side (only when recorded)."""
        if current is None and not telemetry.measuring():
            return
        files, size = telemetry.tree_stats(host)
        telemetry.set_attributes(current, {"sandlot.copy.files": files,
                                           "sandlot.copy.bytes": size})
        telemetry.bytes_copied(size, direction, self.provider)

    async def _copy_in(self, source: Path, dest: str) -> None:
        """Backend hook with validated arguments; the default is the staged tar stream."""
        await transfer.copy_in(self._engine, source, dest)

    async def _copy_out(self, source: str, host: Path) -> None:
        """Backend hook with validated arguments; the default is the staged tar stream."""
        await transfer.copy_out(self._engine, source, host)

    # ---- snapshots --------------------------------------------------------------------------

    async def snapshot(
        self,
        label: str | None = None,
        paths: Sequence[str] | None = None,
        *,
        include_ignored: bool = False,
        exclude: Sequence[str] = (),
    ) -> Snapshot:
        """Record the state of the worktree (or of the directories `paths`) and return it.

        Contents, the executable bit, symlinks and empty directories are kept; names may hold
        any byte. The user's git repository, index, branches and stash are never touched: the
        snapshot lives in sandlot's own store under `<worktree>/.sandlot/` (adr/0046). Files
        the tree's .gitignore files ignore (build output) are left out unless
        `include_ignored`; `exclude` leaves out more (git glob patterns relative to each root,
        e.g. `"data/**"`). Needs sh and git in the sandbox (else SnapshotToolsMissingError).
        """
        return await _snapshots.take(self, label, paths, include_ignored=include_ignored,
                                     exclude=exclude)

    async def snapshots(self) -> list[Snapshot]:
        """Every snapshot of this sandbox, oldest first (id, label, created, size, files)."""
        return await _snapshots.list_all(self)

    async def restore(self, snapshot: Snapshot | str, *, force: bool = False) -> None:
        """Put the snapshot's tree back exactly: contents, executable bits, symlinks, empty
        directories; files and directories made since are removed. Ignored and excluded files
        are left as they are.

        Refuses (SnapshotBusyError) while a process still works there: a command started
        through this object still running, or a process whose working directory is in the tree
        or that has a file there open for writing. `force=True` restores anyway.
        """
        await _snapshots.restore(self, snapshot, force=force)

    async def snapshot_diff(
        self, snapshot: Snapshot | str, *, max_bytes: int = _snapshots.DIFF_LIMIT
    ) -> SnapshotDiff:
        """The tree now against `snapshot`: the changed paths and a binary-safe git patch
        (snapshot -> now). A patch over `max_bytes` is a SnapshotDiffTooLargeError."""
        return await _snapshots.diff(self, snapshot, max_bytes=max_bytes)

    # ---- pause and resume -------------------------------------------------------------------

    @property
    def paused(self) -> bool:
        return self._paused

    def _ensure_running(self) -> None:
        if self._paused:
            raise SandboxPausedError(
                f"sandbox {self.name!r} is paused: call resume() first",
                provider=self.provider, sandbox=self.name,
            )

    async def pause(self) -> None:
        """Freeze the sandbox where the backend can (docker: `docker pause`, its processes
        durable ones included keep their memory; coder: the workspace is stopped, its disk
        kept). Commands fail with SandboxPausedError until `resume()`. Local sandboxes raise
        NotSupportedError. Pausing a paused sandbox does nothing."""
        self._ensure_open()
        if self._paused:
            return
        await self._pause()
        self._paused = True

    async def resume(self) -> None:
        """Undo `pause()`; the next command works as before (coder: once the workspace is
        started and its agent ready again)."""
        self._ensure_open()
        if not self._paused:
            return
        await self._resume()
        self._paused = False

    async def _pause(self) -> None:
        """Backend hook: freeze the sandbox; the default says the backend cannot."""
        raise NotSupportedError(
            f"{self.provider} sandboxes cannot be paused: their processes run on this host "
            "(or the backend has no pause); end the commands instead, or use docker or coder"
        )

    async def _resume(self) -> None:
        """Backend hook: undo `_pause`."""
        raise NotSupportedError(f"{self.provider} sandboxes cannot be paused or resumed")

    # ---- lifecycle --------------------------------------------------------------------------

    async def close(self) -> None:
        """End every running command and release the sandbox (as its `on_close` says).

        Idempotent: a second call does nothing.
        """
        async with self._close_lock:
            if self._engine.closed:
                return
            on_close = getattr(self, "on_close", None) or getattr(
                getattr(self, "options", None), "on_close", None)
            attributes = {**self._span_attributes(), "sandlot.on_close": str(on_close or "")}
            with anyio.CancelScope(shield=True), telemetry.span("sandlot.close", attributes):
                if self._paused and self._resume_before_close:
                    try:
                        await self._resume()
                        self._paused = False
                    except Exception as exc:
                        _log.warning("sandbox %s: resume before close: %s", self.name, exc)
                try:
                    await self._engine.shutdown(end_durable=self._close_ends_durable())
                    await self._close()
                finally:
                    telemetry.sandbox_closed(self.provider)
                    for callback in self._after_close:
                        try:
                            await callback()
                        except Exception as exc:
                            _log.warning("sandbox %s: after close: %s", self.name, exc)

    async def __aenter__(self) -> Sandbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ---- what a backend implements ---------------------------------------------------------

    @abstractmethod
    async def _spawn(self, spec: SpawnSpec) -> RunningCommand:
        """Start `spec` (stdin streamed then closed; stdout/stderr bytes to the sinks)."""

    @abstractmethod
    async def _interactive(self, spec: InteractiveSpec) -> int:
        """Run `spec.argv` wired to its streams, with a PTY when `spec.tty`."""

    @abstractmethod
    async def _close(self) -> None:
        """Release the backend's resources, applying its `on_close` policy."""
