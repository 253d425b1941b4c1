"""A blocking facade over the async API, for scripts that are not async.

    import sandlot, sandlot.sync

    with sandlot.sync.session(sandlot.local()) as sandbox:
        print(sandbox.exec("uname -a").stdout)

The async API runs in an event loop on a private thread (an anyio blocking portal); every call
here waits for its result. Line callbacks are called on that thread, and so are port forwards'
relays: code here may block (a plain `urllib` request to a forwarded port) while they carry the
bytes. Every public method and property of `Sandbox`, `Process`, `DurableProcess` and
`DurableProcesses` has its twin here with the same parameters (tests/unit/test_sync_parity.py
fails on any drift).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from .fswatch import FileEvent, FileWatch
from .processes import (
    DurableProcess,
    DurableProcesses,
    DurableProcessInfo,
    OutputChunk,
    ProcessEvent,
)
from .processes import scripts as process_scripts
from .processes.process import DEFAULT_READ_BYTES
from .provider import IsolatedSandboxProvider
from .sandbox import DEFAULT_MAX_OUTPUT, ExecResult, Process, Sandbox
from .secrets import EnvValue, SecretSet

if TYPE_CHECKING:
    import signal as signals

    from .forward import ForwardAddress

T = TypeVar("T")

__all__ = [
    "SyncDurableProcess",
    "SyncDurableProcesses",
    "SyncProcess",
    "SyncSandbox",
    "session",
]


class SyncProcess:
    """Blocking view of a background `Process`."""

    def __init__(self, process: Process, portal: BlockingPortal) -> None:
        self._process = process
        self._portal = portal

    @property
    def stdout(self) -> str:
        return self._process.stdout

    @property
    def stderr(self) -> str:
        return self._process.stderr

    @property
    def done(self) -> bool:
        return self._process.done

    @property
    def exit_code(self) -> int | None:
        return self._process.exit_code

    def wait(self) -> ExecResult:
        return self._portal.call(self._process.wait)

    def kill(self) -> ExecResult:
        return self._portal.call(self._process.kill)


class SyncDurableProcess:
    """Blocking view of a `DurableProcess`."""

    def __init__(self, process: DurableProcess, portal: BlockingPortal) -> None:
        self.process = process
        self._portal = portal

    @property
    def id(self) -> str:
        return self.process.id

    @property
    def mark(self) -> str:
        return self.process.mark

    @property
    def directory(self) -> str:
        return self.process.directory

    def info(self) -> DurableProcessInfo:
        return self._portal.call(self.process.info)

    def read(self, since: int = 0, *, max_bytes: int = DEFAULT_READ_BYTES) -> OutputChunk:
        return self._portal.call(partial(self.process.read, since, max_bytes=max_bytes))

    def follow(
        self, since: int = 0, *, poll: float = 0.25, max_bytes: int = DEFAULT_READ_BYTES
    ) -> Iterator[OutputChunk]:
        """Chunks as the process prints them, until its output is complete (the async
        `follow`, one chunk at a time through the portal)."""
        chunks = self.process.follow(since, poll=poll, max_bytes=max_bytes)

        async def next_chunk() -> OutputChunk:
            return await anext(chunks)

        try:
            while True:
                try:
                    yield self._portal.call(next_chunk)
                except StopAsyncIteration:
                    return
        finally:
            self._portal.call(chunks.aclose)

    def watch_patterns(self) -> list[str]:
        return self._portal.call(self.process.watch_patterns)

    def events(self, since: int = 0, *, defaults: bool = True,
               poll: float = 0.25) -> Iterator[ProcessEvent]:
        """Events as they happen, until the process's ending (the async `events`, one event
        at a time through the portal)."""
        events = self.process.events(since, defaults=defaults, poll=poll)

        async def next_event() -> ProcessEvent:
            return await anext(events)

        try:
            while True:
                try:
                    yield self._portal.call(next_event)
                except StopAsyncIteration:
                    return
        finally:
            self._portal.call(events.aclose)

    def poll_events(self, since: int = 0, *, defaults: bool = True
                    ) -> tuple[list[ProcessEvent], int, bool]:
        return self._portal.call(partial(self.process.poll_events, since, defaults=defaults))

    def wait(self, timeout: float | None = None) -> DurableProcessInfo:
        return self._portal.call(partial(self.process.wait, timeout))

    def signal(self, sig: str | int | signals.Signals = "TERM") -> bool:
        return self._portal.call(partial(self.process.signal, sig))

    def kill(self, *, timeout: float = 30.0) -> DurableProcessInfo:
        return self._portal.call(partial(self.process.kill, timeout=timeout))

    def remove(self, *, force: bool = False) -> None:
        self._portal.call(partial(self.process.remove, force=force))


class SyncDurableProcesses:
    """Blocking view of `Sandbox.processes`."""

    def __init__(self, processes: DurableProcesses, portal: BlockingPortal) -> None:
        self._processes = processes
        self._portal = portal

    def start(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        watch: Sequence[str] | None = None,
        idle_kill: float | None = None,
    ) -> SyncDurableProcess:
        process = self._portal.call(partial(
            self._processes.start, command, cwd=cwd, env=env, timeout=timeout,
            idle_timeout=idle_timeout, watch=watch, idle_kill=idle_kill))
        return SyncDurableProcess(process, self._portal)

    def run_script(self, script: str, *args: str, max_output: int = 1 << 16,
                   seconds: float = process_scripts.SCRIPT_SECONDS) -> str:
        return self._portal.call(partial(self._processes.run_script, script, *args,
                                         max_output=max_output, seconds=seconds))

    def list(self) -> list[DurableProcessInfo]:
        return self._portal.call(self._processes.list)

    def get(self, process_id: str) -> SyncDurableProcess:
        return SyncDurableProcess(self._portal.call(self._processes.get, process_id),
                                  self._portal)


class SyncFileWatch:
    """Blocking view of a `FileWatch`: an iterator and a context manager."""

    def __init__(self, watch: FileWatch, portal: BlockingPortal) -> None:
        self.watch = watch
        self._portal = portal

    def start(self) -> SyncFileWatch:
        self._portal.call(self.watch.start)
        return self

    def close(self) -> None:
        self._portal.call(self.watch.close)

    def __enter__(self) -> SyncFileWatch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[FileEvent]:
        async def next_event() -> FileEvent:
            return await anext(self.watch)

        while True:
            try:
                yield self._portal.call(next_event)
            except StopAsyncIteration:
                return


class SyncSandbox:
    """Blocking view of a `Sandbox`; same methods, same contract."""

    def __init__(self, sandbox: Sandbox, portal: BlockingPortal) -> None:
        self.sandbox = sandbox
        self._portal = portal

    @property
    def provider(self) -> str:
        return self.sandbox.provider

    @property
    def worktree(self) -> str:
        return self.sandbox.worktree

    @property
    def name(self) -> str:
        return self.sandbox.name

    @property
    def closed(self) -> bool:
        return self.sandbox.closed

    def _call(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._portal.call(partial(func, *args, **kwargs))

    def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: Callable[[str], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
        check: bool = False,
        scrub: bool = False,
    ) -> ExecResult:
        result: ExecResult = self._call(
            self.sandbox.exec, command, cwd=cwd, env=env, stdin=stdin, sudo=sudo,
            timeout=timeout, idle_timeout=idle_timeout, on_stdout=on_stdout,
            on_stderr=on_stderr, max_output=max_output, check=check, scrub=scrub,
        )
        return result

    def start(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: Callable[[str], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
        scrub: bool = False,
    ) -> SyncProcess:
        process: Process = self._call(
            self.sandbox.start, command, cwd=cwd, env=env, stdin=stdin, sudo=sudo,
            timeout=timeout, idle_timeout=idle_timeout, on_stdout=on_stdout,
            on_stderr=on_stderr, max_output=max_output, scrub=scrub,
        )
        return SyncProcess(process, self._portal)

    @property
    def secrets(self) -> SecretSet:
        """`Sandbox.secrets`: the secrets this sandbox was given."""
        return self.sandbox.secrets

    @property
    def processes(self) -> SyncDurableProcesses:
        """Blocking view of `Sandbox.processes` (durable processes)."""
        return SyncDurableProcesses(self.sandbox.processes, self._portal)

    def watch(self, path: str = ".", *, recursive: bool = True, queue_size: int = 10_000,
              poll_interval: float = 0.5, force_poll: bool = False) -> SyncFileWatch:
        """Blocking view of `Sandbox.watch`: `with sandbox.watch(p) as w: for e in w: ...`."""
        return SyncFileWatch(self.sandbox.watch(
            path, recursive=recursive, queue_size=queue_size, poll_interval=poll_interval,
            force_poll=force_poll), self._portal)

    def interactive(
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
        code: int = self._call(
            self.sandbox.interactive, argv, stdin=stdin, stdout=stdout, stderr=stderr,
            cwd=cwd, env=env, tty=tty,
        )
        return code

    @contextmanager
    def forward_port(
        self, remote_port: int, *, local_port: int = 0, remote_host: str = "127.0.0.1"
    ) -> Iterator[ForwardAddress]:
        """`Sandbox.forward_port` as a plain `with` block; the relay runs on the portal's
        thread, so the block may block."""
        forward = self.sandbox.forward_port(
            remote_port, local_port=local_port, remote_host=remote_host)
        with self._portal.wrap_async_context_manager(forward) as address:
            yield address

    def copy_in(self, host_path: str | os.PathLike[str], sandbox_path: str) -> None:
        self._call(self.sandbox.copy_in, host_path, sandbox_path)

    def copy_out(self, sandbox_path: str, host_path: str | os.PathLike[str]) -> None:
        self._call(self.sandbox.copy_out, sandbox_path, host_path)

    def close(self) -> None:
        self._call(self.sandbox.close)

    def __enter__(self) -> SyncSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def session(provider: IsolatedSandboxProvider) -> Iterator[SyncSandbox]:
    """Create a sandbox, yield its blocking view, and always close it."""
    with start_blocking_portal(backend="asyncio") as portal:
        sandbox = portal.call(provider.create)
        try:
            yield SyncSandbox(sandbox, portal)
        finally:
            portal.call(sandbox.close)
