"""The SDK's unified-exec processes (`pty_exec_start` / `pty_write_stdin`) over a sandbox.

Without a terminal (`tty=False`) a process is a sandlot background `Process` (`start`): its
output arrives line by line, stdin is closed, `kill` ends its whole tree. With a terminal it
is `Sandbox.interactive(tty=True)` fed through a host pipe: the backend gives it a real PTY
(a host pty for local and docker, an SSH pty for coder), so it echoes and reads lines as a
shell would. Output of both goes into one buffer the SDK's collector drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, cast

from agents.sandbox.errors import ExecTransportError
from agents.sandbox.session.pty_output import collect_pty_output
from agents.sandbox.session.pty_types import (
    PTY_PROCESSES_MAX,
    PtyExecUpdate,
    allocate_pty_process_id,
    clamp_pty_yield_time_ms,
    process_id_to_prune_from_meta,
    resolve_pty_write_yield_time_ms,
)

from ...errors import SandlotError
from ...sandbox import Process, Sandbox

#: How long a terminal process gets to end after Ctrl-C and EOF before it is abandoned to the
#: sandbox's own sweep at close.
_TERMINATE_GRACE = 5.0
#: Seconds the SDK's own backends wait after writing to a terminal before collecting.
_ECHO_SETTLE = 0.1


@dataclass
class _Entry:
    tty: bool
    chunks: deque[bytes] = field(default_factory=deque)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    notify: asyncio.Event = field(default_factory=asyncio.Event)
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    last_used: float = field(default_factory=time.monotonic)
    exit_code: int | None = None
    process: Process | None = None
    task: asyncio.Task[None] | None = None
    stdin_fd: int | None = None

    def add(self, chunk: bytes) -> None:
        # Called on the loop only (see _Sink): appending needs no lock against the collector,
        # which takes chunks under `lock` on the same loop.
        self.chunks.append(chunk)
        self.notify.set()

    def finish(self, code: int | None) -> None:
        self.exit_code = code
        self.closed.set()
        self.notify.set()


class _Sink:
    """A writable binary stream for `interactive`: bytes go to the entry on the loop, from
    whichever thread writes them."""

    def __init__(self, entry: _Entry, loop: asyncio.AbstractEventLoop) -> None:
        self._entry = entry
        self._loop = loop

    def write(self, data: bytes) -> int:
        if data:
            self._loop.call_soon_threadsafe(self._entry.add, bytes(data))
        return len(data)

    def flush(self) -> None:
        return None

    def fileno(self) -> int:
        raise OSError("not a file")  # interactive() then knows this is no terminal


class PtyProcesses:
    """The live processes of one session, by the SDK's process id."""

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self._lock = asyncio.Lock()
        self._entries: dict[int, _Entry] = {}
        self._ids: set[int] = set()

    async def start(self, argv: Sequence[str], *, cwd: str, tty: bool,
                    yield_time_s: float | None, max_output_tokens: int | None) -> PtyExecUpdate:
        entry = _Entry(tty=tty)
        try:
            if tty:
                self._start_terminal(entry, list(argv), cwd)
            else:
                entry.process = await self._sandbox.start(
                    list(argv), cwd=cwd,
                    on_stdout=lambda line: entry.add(f"{line}\n".encode()),
                    on_stderr=lambda line: entry.add(f"{line}\n".encode()))
                entry.task = asyncio.create_task(self._wait(entry))
        except SandlotError as exc:
            raise ExecTransportError(command=list(argv), context={"backend": "sandlot"},
                                     cause=exc) from exc
        async with self._lock:
            process_id = allocate_pty_process_id(self._ids)
            self._ids.add(process_id)
            pruned = self._prune()
            self._entries[process_id] = entry
        if pruned is not None:
            await self._terminate(pruned)
        wait_ms = 10_000 if yield_time_s is None else int(yield_time_s * 1000)
        return await self._update(process_id, entry, clamp_pty_yield_time_ms(wait_ms),
                                  max_output_tokens)

    async def write(self, process_id: int, chars: str, *, yield_time_s: float | None,
                    max_output_tokens: int | None) -> PtyExecUpdate:
        from agents.sandbox.errors import PtySessionNotFoundError

        async with self._lock:
            entry = self._entries.get(process_id)
        if entry is None:
            raise PtySessionNotFoundError(session_id=process_id)
        if chars:
            if not entry.tty or entry.stdin_fd is None:
                # The SDK's shell tool turns exactly this message into its advice.
                raise RuntimeError("stdin is not available for this process")
            data = chars.encode("utf-8")
            with contextlib.suppress(OSError):  # the process ended meanwhile
                await asyncio.to_thread(os.write, entry.stdin_fd, data)
            await asyncio.sleep(_ECHO_SETTLE)
        wait_ms = 250 if yield_time_s is None else int(yield_time_s * 1000)
        entry.last_used = time.monotonic()
        return await self._update(
            process_id, entry,
            resolve_pty_write_yield_time_ms(yield_time_ms=wait_ms, input_empty=chars == ""),
            max_output_tokens)

    async def terminate_all(self) -> None:
        async with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
            self._ids.clear()
        for entry in entries:
            await self._terminate(entry)

    # ---- internals ------------------------------------------------------------------------

    def _start_terminal(self, entry: _Entry, argv: list[str], cwd: str) -> None:
        read_fd, write_fd = os.pipe()
        stdin = os.fdopen(read_fd, "rb", buffering=0)
        entry.stdin_fd = write_fd
        sink = cast(BinaryIO, _Sink(entry, asyncio.get_running_loop()))

        async def run() -> None:
            code: int | None = None
            try:
                code = await self._sandbox.interactive(
                    argv, stdin=cast(BinaryIO, stdin), stdout=sink, stderr=sink, cwd=cwd,
                    tty=True)
            except SandlotError as exc:
                entry.add(f"\nsandbox error: {exc}\n".encode())
            finally:
                stdin.close()
                # Let output the sink scheduled from a thread land before the end is seen.
                await asyncio.sleep(0)
                entry.finish(code)

        entry.task = asyncio.create_task(run())

    @staticmethod
    async def _wait(entry: _Entry) -> None:
        assert entry.process is not None
        code: int | None = None
        try:
            result = await entry.process.wait()
            code = result.exit_code
        except SandlotError as exc:
            entry.add(f"\nsandbox error: {exc}\n".encode())
        finally:
            entry.finish(code)

    async def _update(self, process_id: int, entry: _Entry, wait_ms: int,
                      max_output_tokens: int | None) -> PtyExecUpdate:
        output, original_tokens, done = await collect_pty_output(
            output_chunks=entry.chunks, output_lock=entry.lock, output_notify=entry.notify,
            is_done=entry.closed.is_set, yield_time_ms=wait_ms,
            max_output_tokens=max_output_tokens)
        exit_code = entry.exit_code if done else None
        live: int | None = process_id
        if done:
            async with self._lock:
                removed = self._entries.pop(process_id, None)
                self._ids.discard(process_id)
            if removed is not None:
                await self._terminate(removed)
            live = None
            if exit_code is None:
                exit_code = -1  # it ended without a code (the sandbox went away)
        return PtyExecUpdate(process_id=live, output=output, exit_code=exit_code,
                             original_token_count=original_tokens)

    def _prune(self) -> _Entry | None:
        if len(self._entries) < PTY_PROCESSES_MAX:
            return None
        meta = [(pid, e.last_used, e.closed.is_set()) for pid, e in self._entries.items()]
        victim = process_id_to_prune_from_meta(meta)
        if victim is None:
            return None
        self._ids.discard(victim)
        return self._entries.pop(victim, None)

    async def _terminate(self, entry: _Entry) -> None:
        if entry.process is not None and not entry.closed.is_set():
            with contextlib.suppress(SandlotError):
                await entry.process.kill()
        if entry.stdin_fd is not None:
            fd, entry.stdin_fd = entry.stdin_fd, None
            if not entry.closed.is_set():
                with contextlib.suppress(OSError):
                    os.write(fd, b"\x03")  # Ctrl-C to the terminal's foreground job
            with contextlib.suppress(OSError):
                os.close(fd)  # EOF: the pty gets ^D
        task: Any = entry.task
        if task is not None and not task.done():
            with contextlib.suppress(TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(task), _TERMINATE_GRACE)
            if not task.done():
                task.cancel()
