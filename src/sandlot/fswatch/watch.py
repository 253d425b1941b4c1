"""`sandbox.watch(path)`: file-system change events from inside the sandbox (adr/0052).

A small standard-library watcher (agent.py) runs in the sandbox as a background command:
inotify through ctypes where the kernel gives it, else polling (and where the sandbox has no
python3, a POSIX sh poller: shpoll.py); it prints one JSON line per change. Here its lines
become `FileEvent`s in a bounded queue; when the consumer falls behind
and the queue is full, the next event is an explicit `overflow` (with how many were dropped),
never a silent drop. The watch ends with its `async with` block, its loop's `aclose()`, or the
sandbox's close (which ends every command it started).
"""

from __future__ import annotations

import collections
import contextlib
import json
import posixpath
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Literal

import anyio

from .. import _shell
from ..errors import ConfigurationError, SandlotError
from . import shpoll

if TYPE_CHECKING:
    from ..sandbox import Process, Sandbox

AGENT_SOURCE = (Path(__file__).with_name("agent.py")).read_text()

EventKind = Literal["created", "modified", "deleted", "moved", "overflow"]
Source = Literal["inotify", "poll"]

#: Events held for a consumer that has not taken them yet, unless told otherwise.
DEFAULT_QUEUE = 10_000
#: How long start waits for the watcher to set its watches.
READY_SECONDS = 60.0


@dataclass(frozen=True)
class FileEvent:
    """One change under the watched path."""

    kind: EventKind
    path: str
    """Relative to the watched path (for `moved`: the old name)."""
    dest: str = ""
    """For `moved`: the new name."""
    source: Source = "inotify"
    """How it was seen: `inotify` (the kernel told), or `poll` (two listings compared: a
    change undone between them is not seen, and a rename is recognised by its inode)."""
    time: float = 0.0
    """Epoch seconds when sandlot received it."""
    dropped: int = 0
    """For `overflow`: how many events were lost (0 when the kernel's own queue overflowed
    and the count is unknown)."""


class FileWatch:
    """Async iterator (and async context manager) over a path's changes."""

    def __init__(self, sandbox: Sandbox, path: str, *, recursive: bool = True,
                 queue_size: int = DEFAULT_QUEUE, poll_interval: float = 0.5,
                 force_poll: bool = False) -> None:
        if isinstance(queue_size, bool) or not isinstance(queue_size, int) or queue_size < 1:
            raise ConfigurationError(f"queue_size must be an int >= 1, got {queue_size!r}")
        checked = _shell.validate_seconds(poll_interval, "poll_interval")
        if checked is None or checked < 0.05:
            raise ConfigurationError("poll_interval must be at least 0.05 seconds")
        self.sandbox = sandbox
        self.path = _shell.validate_sandbox_path(
            posixpath.join(sandbox.worktree, path), "path")
        self.recursive = recursive
        self.queue_size = queue_size
        self.poll_interval = checked
        self.force_poll = force_poll
        self.source: Source | None = None
        self._queue: collections.deque[FileEvent] = collections.deque()
        self._dropped = 0
        self._wake = anyio.Event()
        self._process: Process | None = None
        self._closed = False
        self._ready = anyio.Event()

    def __repr__(self) -> str:
        return f"<FileWatch {self.path!r} ({self.source or 'not started'}) in {self.sandbox!r}>"

    def _line(self, line: str) -> None:
        try:
            data = json.loads(line)
            kind = str(data["k"])
        except (ValueError, KeyError, TypeError):
            return  # not one of ours: the sandbox's output is untrusted
        source: Source = "poll" if data.get("s") == "poll" else "inotify"
        if kind == "ready":
            self.source = source
            self._ready.set()
            return
        kinds: dict[str, EventKind] = {"created": "created", "modified": "modified",
                                       "deleted": "deleted", "moved": "moved",
                                       "overflow": "overflow"}
        if kind not in kinds:
            return
        event = FileEvent(kind=kinds[kind], path=str(data.get("p", ""))[:4096],
                          dest=str(data.get("d", ""))[:4096], source=source, time=time.time())
        if len(self._queue) >= self.queue_size:
            self._dropped += 1
        else:
            if self._dropped:
                self._queue.append(FileEvent(kind="overflow", path="", source=source,
                                             time=time.time(), dropped=self._dropped))
                self._dropped = 0
            self._queue.append(event)
        self._wake.set()

    async def start(self) -> FileWatch:
        """Start the watcher and wait until its watches are set (changes after this return
        are seen)."""
        if self._process is not None:
            return self
        if self._closed:
            raise SandlotError("this watch is closed; start a new one with sandbox.watch()")
        self._process = await self.sandbox.start(
            ["sh", "-c", shpoll.LAUNCH, "sandlot-fswatch", AGENT_SOURCE, shpoll.SCRIPT,
             self.path, "1" if self.recursive else "0", str(self.poll_interval),
             "1" if self.force_poll else "0"],
            cwd="/", on_stdout=self._line, max_output=1 << 16)
        with anyio.move_on_after(READY_SECONDS):
            while not self._ready.is_set():
                if self._process.done:
                    break
                with anyio.move_on_after(0.1):
                    await self._ready.wait()
        if not self._ready.is_set():
            result = await self._process.kill()
            detail = result.stderr.strip()[-300:] or f"exit {result.exit_code}"
            raise SandlotError(f"cannot watch {self.path}: {detail}")
        return self

    async def close(self) -> None:
        """End the watcher (idempotent)."""
        self._closed = True
        process, self._process = self._process, None
        if process is not None and not process.done:
            # A closed or gone sandbox took the watcher with it.
            with anyio.CancelScope(shield=True), contextlib.suppress(SandlotError):
                await process.kill()
        self._wake.set()

    async def __aenter__(self) -> FileWatch:
        return await self.start()

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()

    def __aiter__(self) -> FileWatch:
        return self

    async def __anext__(self) -> FileEvent:
        if self._process is None and not self._closed:
            await self.start()
        while True:
            if self._queue:
                return self._queue.popleft()
            if self._dropped:
                dropped, self._dropped = self._dropped, 0
                return FileEvent(kind="overflow", path="", source=self.source or "inotify",
                                 time=time.time(), dropped=dropped)
            if self._closed or self._process is None or self._process.done:
                raise StopAsyncIteration
            self._wake = anyio.Event()
            with anyio.move_on_after(0.25):
                await self._wake.wait()

    async def aclose(self) -> None:
        await self.close()
