"""Watched processes: a durable process's output read as events -- a line matching a crash
pattern, the exit, an idle kill -- from a byte cursor, so a reattached program picks the
stream up where the last one stopped (adr/0051).

Matching happens here, on the host, over the output the process's files hold: nothing more
runs in the sandbox, any program attached to it sees the same events, and the cursor of an
event is the output offset just after its line. A process's own patterns (given at start) are
kept in its directory, so `get(id).events()` matches the same ones.
"""

from __future__ import annotations

import base64
import binascii
import re
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import anyio

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from .models import DurableProcessInfo
    from .process import DurableProcess

#: The crash lines every watched process is matched against unless told otherwise (name:
#: regex). Each names the runtime's own first line of a crash report.
DEFAULT_PATTERNS: Mapping[str, str] = {
    "go panic": r"^panic: |^fatal error: ",
    "python traceback": r"^Traceback \(most recent call last\):",
    "node unhandled error": (
        r"^Uncaught \w|^\[?UnhandledPromiseRejection|UnhandledPromiseRejectionWarning|"
        r"^Node\.js v\d+\.\d+\.\d+$"
    ),
    "rust panic": r"^thread '.*' panicked at ",
    "segmentation fault": r"Segmentation fault",
    "out of memory": (
        r"(?i)\bout of memory\b|\boom-kill|\bKilled process \d+|^MemoryError\b|"
        r"JavaScript heap out of memory"
    ),
}

#: A process may have at most this many patterns of its own, each at most this long.
MAX_PATTERNS = 64
MAX_PATTERN_CHARS = 1000
#: A line longer than this is matched and reported by its first this-many characters.
MAX_LINE_CHARS = 4000

EventKind = Literal["match", "exit", "idle_kill", "timeout", "lost"]


@dataclass(frozen=True)
class ProcessEvent:
    """One event of a watched process."""

    kind: EventKind
    """`match`: a line matched a pattern; then how the process ended: `exit` (it exited by
    itself or by a signal), `idle_kill` (silent for its `idle_kill` seconds), `timeout` (its
    own time limit), `lost` (its supervisor vanished: no exit status will come)."""
    time: float
    """Epoch seconds when sandlot saw it (a match: the read that brought its line)."""
    cursor: int
    """Pass as `since=` to continue after this event (output offset after its line)."""
    pattern: str = ""
    """For a match: the pattern's name (a default's, or the regex itself for one given)."""
    line: str = ""
    exit_code: int | None = None


def validate(patterns: Sequence[str] | None) -> list[str]:
    """Patterns given to `start(watch=...)`: compiled here, so a bad one is refused before
    anything starts."""
    if patterns is None:
        return []
    if isinstance(patterns, str):
        raise ConfigurationError("watch takes a list of regular expressions, not one string; "
                                 "pass watch=[...]")
    items = list(patterns)
    if len(items) > MAX_PATTERNS:
        raise ConfigurationError(f"watch has {len(items)} patterns; at most {MAX_PATTERNS}")
    for item in items:
        if not isinstance(item, str) or not item or len(item) > MAX_PATTERN_CHARS:
            raise ConfigurationError(
                f"each watch pattern must be a non-empty regular expression of at most "
                f"{MAX_PATTERN_CHARS} characters, got {str(item)[:80]!r}")
        try:
            re.compile(item)
        except re.error as exc:
            raise ConfigurationError(f"watch pattern {item[:80]!r} is not a valid regular "
                                     f"expression: {exc}") from None
    return items


def encode(patterns: Sequence[str]) -> str:
    """The patterns as the process's `watch` file holds them: one base64 line each."""
    return "".join(base64.b64encode(p.encode()).decode("ascii") + "\n" for p in patterns)


def decode(text: str) -> list[str]:
    out = []
    for line in text.split():
        try:
            out.append(base64.b64decode(line, validate=True).decode())
        except (binascii.Error, ValueError, UnicodeDecodeError):
            continue  # a spoiled line is skipped; validate() below drops a bad regex too
    return [p for p in out if _compiles(p)][:MAX_PATTERNS]


def _compiles(pattern: str) -> bool:
    try:
        re.compile(pattern)
    except re.error:
        return False
    return len(pattern) <= MAX_PATTERN_CHARS


def matcher(own: Sequence[str], defaults: bool = True) -> list[tuple[str, re.Pattern[str]]]:
    """(name, regex) to match each line against: the defaults, then the process's own."""
    table = [(name, re.compile(rx)) for name, rx in DEFAULT_PATTERNS.items()] if defaults else []
    return table + [(rx, re.compile(rx)) for rx in own]


def scan(data: bytes, start: int, table: Sequence[tuple[str, re.Pattern[str]]], *,
         final: bool, seen: float) -> tuple[list[ProcessEvent], int]:
    """Match each complete line of `data` (which begins at output offset `start`); the events
    and the offset where the next scan starts (after the last complete line, or the end when
    `final`: the output is closed and an unterminated last line counts too). Pure."""
    events: list[ProcessEvent] = []
    offset = 0
    while True:
        end = data.find(b"\n", offset)
        if end < 0:
            if final and offset < len(data):
                end = len(data)
            else:
                break
        raw = data[offset:end]
        offset = min(end + 1, len(data)) if end < len(data) else end
        line = raw.decode("utf-8", "replace").rstrip("\r")[:MAX_LINE_CHARS]
        for name, rx in table:
            if rx.search(line):
                events.append(ProcessEvent(kind="match", time=seen, cursor=start + offset,
                                           pattern=name, line=line))
                break  # one event per line: the first pattern that matches names it
    return events, start + offset


def ending(info: DurableProcessInfo, seen: float) -> ProcessEvent:
    """The last event: how the process ended."""
    kind: EventKind = "exit"
    if info.state == "lost":
        kind = "lost"
    elif info.ended_by == "idle_timeout":
        kind = "idle_kill"
    elif info.ended_by == "timeout":
        kind = "timeout"
    return ProcessEvent(kind=kind, time=seen, cursor=info.output_bytes,
                        exit_code=info.exit_code)


async def poll(process: DurableProcess, since: int = 0, *, defaults: bool = True,
               max_bytes: int = 1 << 20) -> tuple[list[ProcessEvent], int, bool]:
    """The events from `since` up to what the process has printed so far, without waiting:
    (events, the cursor to pass next, whether the stream is over -- the ending is among the
    events)."""
    table = matcher(await process.watch_patterns(), defaults)
    events: list[ProcessEvent] = []
    cursor = since
    while True:
        chunk = await process.read(cursor, max_bytes=max_bytes)
        seen = time.time()
        # A line longer than a whole read is taken as it stands (else no read would progress).
        whole = chunk.complete or (len(chunk.data) >= max_bytes and b"\n" not in chunk.data)
        found, cursor = scan(chunk.data, chunk.start, table, final=whole, seen=seen)
        events.extend(found)
        if chunk.complete:
            events.append(ending(chunk.info, seen))
            return events, chunk.info.output_bytes, True
        if not chunk.info.running and not chunk.data:
            # Ended, but something it started still holds the output open: not over yet.
            return events, cursor, False
        if chunk.next >= chunk.info.output_bytes or len(chunk.data) < max_bytes:
            return events, cursor, False


async def stream(process: DurableProcess, since: int = 0, *, defaults: bool = True,
                 poll_seconds: float = 0.25) -> AsyncGenerator[ProcessEvent, None]:
    """Events as they happen, until the process's ending (the last event)."""
    cursor = since
    pause = poll_seconds
    quiet_since: float | None = None
    while True:
        events, cursor, over = await poll(process, cursor, defaults=defaults)
        for event in events:
            yield event
        if over:
            return
        info = await process.info() if not events else None
        if info is not None and not info.running:
            # Ended, but its output is held open by something it started: give it a moment,
            # then report the ending as it stands.
            quiet_since = quiet_since if quiet_since is not None else time.monotonic()
            if time.monotonic() - quiet_since > 2.0:
                yield ending(info, time.time())
                return
        if not events:
            await anyio.sleep(pause)
            pause = min(pause * 2, 1.0)
        else:
            pause = poll_seconds
