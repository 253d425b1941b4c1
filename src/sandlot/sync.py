"""A blocking facade over the async API, for scripts that are not async.

    import sandlot, sandlot.sync

    with sandlot.sync.session(sandlot.local()) as sandbox:
        print(sandbox.exec("uname -a").stdout)

The async API runs in an event loop on a private thread (an anyio blocking portal); every call
here waits for its result. Line callbacks are called on that thread.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any, BinaryIO, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal

from .processes import DurableProcess, DurableProcesses, DurableProcessInfo, OutputChunk
from .processes.process import DEFAULT_READ_BYTES
from .provider import IsolatedSandboxProvider
from .sandbox import DEFAULT_MAX_OUTPUT, ExecResult, Process, Sandbox

T = TypeVar("T")


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

    def info(self) -> DurableProcessInfo:
        return self._portal.call(self.process.info)

    def read(self, since: int = 0, *, max_bytes: int = DEFAULT_READ_BYTES) -> OutputChunk:
        return self._portal.call(partial(self.process.read, since, max_bytes=max_bytes))

    def follow(self, since: int = 0, *, poll: float = 0.25) -> Iterator[OutputChunk]:
        """Chunks as the process prints them, until its output is complete (the async
        `follow`, one chunk at a time through the portal)."""
        chunks = self.process.follow(since, poll=poll)

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

    def wait(self, timeout: float | None = None) -> DurableProcessInfo:
        return self._portal.call(partial(self.process.wait, timeout))

    def signal(self, sig: str | int = "TERM") -> bool:
        return self._portal.call(partial(self.process.signal, sig))

    def kill(self) -> DurableProcessInfo:
        return self._portal.call(self.process.kill)

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
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
    ) -> SyncDurableProcess:
        process = self._portal.call(partial(
            self._processes.start, command, cwd=cwd, env=env, timeout=timeout,
            idle_timeout=idle_timeout))
        return SyncDurableProcess(process, self._portal)

    def list(self) -> list[DurableProcessInfo]:
        return self._portal.call(self._processes.list)

    def get(self, process_id: str) -> SyncDurableProcess:
        return SyncDurableProcess(self._portal.call(self._processes.get, process_id),
                                  self._portal)


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

    def _call(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return self._portal.call(partial(func, *args, **kwargs))

    def exec(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        sudo: bool = False,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: Callable[[str], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
        check: bool = False,
    ) -> ExecResult:
        result: ExecResult = self._call(
            self.sandbox.exec, command, cwd=cwd, env=env, stdin=stdin, sudo=sudo,
            timeout=timeout, idle_timeout=idle_timeout, on_stdout=on_stdout,
            on_stderr=on_stderr, max_output=max_output, check=check,
        )
        return result

    def start(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stdin: str | bytes | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        on_stdout: Callable[[str], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        max_output: int = DEFAULT_MAX_OUTPUT,
    ) -> SyncProcess:
        process: Process = self._call(
            self.sandbox.start, command, cwd=cwd, env=env, stdin=stdin, timeout=timeout,
            idle_timeout=idle_timeout, on_stdout=on_stdout, on_stderr=on_stderr,
            max_output=max_output,
        )
        return SyncProcess(process, self._portal)

    @property
    def processes(self) -> SyncDurableProcesses:
        """Blocking view of `Sandbox.processes` (durable processes)."""
        return SyncDurableProcesses(self.sandbox.processes, self._portal)

    def interactive(
        self,
        argv: Sequence[str],
        *,
        stdin: BinaryIO | None = None,
        stdout: BinaryIO | None = None,
        stderr: BinaryIO | None = None,
        cwd: str | None = None,
        tty: bool | None = None,
    ) -> int:
        code: int = self._call(
            self.sandbox.interactive, argv, stdin=stdin, stdout=stdout, stderr=stderr,
            cwd=cwd, tty=tty,
        )
        return code

    def copy_in(self, host_path: str | os.PathLike[str], sandbox_path: str) -> None:
        self._call(self.sandbox.copy_in, host_path, sandbox_path)

    def copy_out(self, sandbox_path: str, host_path: str | os.PathLike[str]) -> None:
        self._call(self.sandbox.copy_out, sandbox_path, host_path)

    def close(self) -> None:
        self._call(self.sandbox.close)


@contextmanager
def session(provider: IsolatedSandboxProvider) -> Iterator[SyncSandbox]:
    """Create a sandbox, yield its blocking view, and always close it."""
    with start_blocking_portal(backend="asyncio") as portal:
        sandbox = portal.call(provider.create)
        try:
            yield SyncSandbox(sandbox, portal)
        finally:
            portal.call(sandbox.close)
