"""One durable process: read its output from a byte cursor, follow it, wait, signal, remove.

Every call is one command in the sandbox that reads the process's files (scripts.py), so any
program attached to the sandbox reads the same process, and a dropped connection costs nothing
but the call in flight (it fails with the backend's typed error; the next call reconnects).
"""

from __future__ import annotations

import base64
import binascii
import math
import signal as signals
import time
from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING

import anyio

from .. import _shell
from ..errors import (
    ConfigurationError,
    ProcessNotFoundError,
    ProcessStillRunningError,
    SandlotError,
)
from . import parse, scripts, watch
from .models import DurableProcessInfo, OutputChunk

if TYPE_CHECKING:
    from .registry import DurableProcesses

#: Bytes one read returns at most, unless asked otherwise.
DEFAULT_READ_BYTES = 1 << 20
MAX_READ_BYTES = 16 << 20

#: The signals a caller may send (by name, number or `signal.Signals`).
SIGNALS = frozenset(
    {"HUP", "INT", "QUIT", "KILL", "USR1", "USR2", "TERM", "CONT", "STOP", "TSTP", "ALRM",
     "WINCH"}
)

#: How long `wait` waits inside the sandbox per command (so a long wait is several commands,
#: and the program notices a dropped connection between them).
_WAIT_CHUNK = 30.0
#: How long `follow` keeps reading after the process ended while something it started still
#: holds its output open.
_FOLLOW_GRACE = 2.0


def signal_name(sig: str | int | signals.Signals) -> str:
    """`TERM`, `SIGTERM`, 15 and `signal.SIGTERM` all name TERM."""
    try:
        if isinstance(sig, str):
            name = sig.strip().upper().removeprefix("SIG")
        else:
            name = signals.Signals(sig).name.removeprefix("SIG")
    except ValueError:
        name = str(sig)
    if name not in SIGNALS:
        raise ConfigurationError(
            f"cannot send signal {sig!r}; send one of {', '.join(sorted(SIGNALS))}"
        )
    return name


class DurableProcess:
    """A handle on one durable process (from `sandbox.processes.start()` or `.get(id)`)."""

    def __init__(self, processes: DurableProcesses, process_id: str) -> None:
        self._processes = processes
        self.id = process_id
        self._patterns: list[str] | None = None

    def __repr__(self) -> str:
        return f"<DurableProcess {self.id} in {self._processes.sandbox.name!r}>"

    @property
    def mark(self) -> str:
        """The run mark in the environment of everything it started (see `_run_marks`): one
        of the sandbox's durable marks, so closing a sandbox that goes away ends it too."""
        return f"{self._processes._exec_engine.durable_mark}-{int(self.id, 16)}"

    @property
    def directory(self) -> str:
        """Where its files are, inside the sandbox."""
        return f"{self._processes.root}/{self.id}"

    async def _run(self, script: str, *args: str, max_output: int = 1 << 16) -> str:
        return await self._processes.run_script(script, self.directory, *args,
                                                max_output=max_output)

    def _missing(self) -> ProcessNotFoundError:
        return ProcessNotFoundError(
            f"no durable process {self.id!r} in sandbox {self._processes.sandbox.name!r}: it "
            "was removed, or started in another sandbox; list the ones there with "
            "sandbox.processes.list()"
        )

    async def info(self) -> DurableProcessInfo:
        return (await self.read(max_bytes=0)).info

    async def read(self, since: int = 0, *, max_bytes: int = DEFAULT_READ_BYTES) -> OutputChunk:
        """Output from byte `since` on (stdout and stderr together, as they were written), at
        most `max_bytes` of it; `chunk.next` is the cursor to pass next time. Bytes the bounded
        output files no longer hold are skipped and counted in `chunk.dropped`."""
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise ConfigurationError(f"since must be a byte offset >= 0, got {since!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or not (
            0 <= max_bytes <= MAX_READ_BYTES
        ):
            raise ConfigurationError(
                f"max_bytes must be an int from 0 to {MAX_READ_BYTES}, got {max_bytes!r}"
            )
        out = await self._run(scripts.READ, str(since), str(max_bytes),
                              max_output=max_bytes * 2 + (1 << 16))
        if out.strip() == "missing":
            raise self._missing()
        header, _, body = out.partition("--\n")
        found = parse.records(header)
        if not found:
            raise parse.ProcessRecordError(f"process {self.id}: no record in {out[:200]!r}")
        record = found[0]
        info = parse.info(self.id, record, parse.number(record, "now"))
        start = parse.number(record, "start")
        if since > info.output_bytes:
            raise ConfigurationError(
                f"since={since} is past the end of process {self.id}'s output "
                f"({info.output_bytes} bytes so far); pass a cursor a read returned"
            )
        try:
            data = base64.b64decode("".join(body.split()), validate=True)
        except (binascii.Error, ValueError):
            raise parse.ProcessRecordError(
                f"process {self.id}: unreadable output encoding"
            ) from None
        following = start + len(data)
        complete = (
            info.state != "running"
            and following >= info.output_bytes
            and (record.get("eof") == "1" or info.state == "lost")
        )
        return OutputChunk(data=data, start=start, next=following, dropped=start - since,
                           complete=complete, info=info)

    async def follow(
        self, since: int = 0, *, poll: float = 0.25, max_bytes: int = DEFAULT_READ_BYTES
    ) -> AsyncGenerator[OutputChunk, None]:
        """Chunks as the process prints them, until its output is complete. Reads again after
        `poll` seconds when nothing new came (up to 1 s while it stays quiet)."""
        cursor = since
        pause = poll
        ended_at: float | None = None
        while True:
            chunk = await self.read(cursor, max_bytes=max_bytes)
            if chunk.data or chunk.dropped:
                yield chunk
                pause = poll
            cursor = chunk.next
            if chunk.complete:
                return
            if chunk.info.state != "running" and not chunk.data:
                # Ended, but something it started still holds its output open.
                ended_at = ended_at if ended_at is not None else time.monotonic()
                if time.monotonic() - ended_at > _FOLLOW_GRACE:
                    return
            if not chunk.data:
                await anyio.sleep(pause)
                pause = min(pause * 2, 1.0)

    async def watch_patterns(self) -> list[str]:
        """The patterns it was started with (`start(watch=...)`), read from its directory once;
        the defaults (watch.DEFAULT_PATTERNS) come on top unless turned off."""
        if self._patterns is None:
            out = await self._run(scripts.WATCH_READ, max_output=1 << 20)
            if out.strip() == "missing":
                raise self._missing()
            self._patterns = watch.decode(out)
        return list(self._patterns)

    async def events(self, since: int = 0, *, defaults: bool = True,
                     poll: float = 0.25) -> AsyncGenerator[watch.ProcessEvent, None]:
        """Events as they happen -- a line matching a crash pattern (the defaults: Go and Rust
        panics, Python tracebacks, Node unhandled errors, segmentation faults, OOM kills; plus
        its own), then how it ended (`exit`, `idle_kill`, `timeout`, `lost`) -- from output
        offset `since`. Each event's `cursor` resumes after it, from any program attached to
        the sandbox (adr/0051)."""
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise ConfigurationError(f"since must be an output offset >= 0, got {since!r}")
        async for event in watch.stream(self, since, defaults=defaults, poll_seconds=poll):
            yield event

    async def poll_events(self, since: int = 0, *, defaults: bool = True
                          ) -> tuple[list[watch.ProcessEvent], int, bool]:
        """The events from `since` up to now, without waiting: (events, the cursor for the next
        call, whether the stream is over)."""
        if isinstance(since, bool) or not isinstance(since, int) or since < 0:
            raise ConfigurationError(f"since must be an output offset >= 0, got {since!r}")
        return await watch.poll(self, since, defaults=defaults)

    async def wait(self, timeout: float | None = None) -> DurableProcessInfo:
        """Its info once it exited (or was lost); `TimeoutError` if `timeout` seconds pass
        first (the process keeps running)."""
        _shell.validate_seconds(timeout, "timeout")
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            span = _WAIT_CHUNK
            if deadline is not None:
                span = min(span, max(deadline - time.monotonic(), 0.0))
            quarters = max(math.ceil(span * 4), 1)
            state = (await self._processes.run_script(
                scripts.WAIT, self.directory, str(quarters), str(parse.LOST_AFTER),
                seconds=quarters / 4 + scripts.SCRIPT_SECONDS,
            )).strip()
            if state == "missing":
                raise self._missing()
            if state in ("exited", "lost"):
                return await self.info()
            if state != "running":
                raise parse.ProcessRecordError(f"process {self.id}: unexpected state {state!r}")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"durable process {self.id} still runs after {timeout:g}s (it keeps "
                    "running: wait again, or kill() it)"
                )

    async def signal(self, sig: str | int | signals.Signals = "TERM") -> bool:
        """Send `sig` to the process's group (the supervisor delivers it within a quarter
        second). False when it already ended or was lost."""
        name = signal_name(sig)
        state = (await self._run(scripts.SIGNAL, name, str(parse.LOST_AFTER))).strip()
        if state == "missing":
            raise self._missing()
        return state == "sent"

    async def kill(self, *, timeout: float = 30.0) -> DurableProcessInfo:
        """SIGKILL its group, wait for its exit status, then end whatever it started that left
        the group (a daemon that called setsid), found by its run mark."""
        await self.signal("KILL")
        info = await self.wait(timeout)
        await self._processes._exec_engine.end_marked(self.mark)
        return info

    async def remove(self, *, force: bool = False) -> None:
        """Delete its files. A running process is refused unless `force=True` (then killed
        first)."""
        info = await self.info()
        if info.running:
            if not force:
                raise ProcessStillRunningError(
                    f"durable process {self.id} is still running ({info.command!r}); kill() it "
                    "first or call remove(force=True)"
                )
            await self.kill()
        state = (await self._run(scripts.REMOVE)).strip()
        if state == "missing":
            raise self._missing()
        if state != "removed":
            raise SandlotError(f"could not remove the files of durable process {self.id}")
