"""Reading the `key=value` records the process scripts print."""

from __future__ import annotations

import base64
import binascii

from ..errors import ProcessRecordError as ProcessRecordError  # its home until errors.py
from .models import DurableProcessInfo, EndedBy, ProcessState

#: Seconds without a beat after which a process with no exit status counts as lost. The
#: supervisor beats every second; the margin covers a loaded machine.
LOST_AFTER = 15


#: The file in a process's directory each record field comes from (for the error's message).
FILES = {
    "exit": "exit", "beat": "beat", "started": "started", "ended_by": "ended_by",
    "cwd": "cwd.b64", "command": "command.b64", "total": "out.*",
}


def records(text: str) -> list[dict[str, str]]:
    """`key=value` lines, split into records at `--` lines."""
    found: list[dict[str, str]] = []
    current: dict[str, str] = {}
    # Only "\n" ends a line: str.splitlines() also splits at \r, \x1c, \x85 ... which a
    # tampered record file could carry to forge a field of another record.
    for line in text.split("\n"):
        if line == "--":
            found.append(current)
            current = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key] = value
    if current:
        found.append(current)
    return found


def b64text(value: str) -> str:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8", "surrogateescape")
    except (binascii.Error, ValueError):
        raise ProcessRecordError(f"unreadable process record field {value[:40]!r}") from None


def number(record: dict[str, str], key: str, default: int | None = None) -> int:
    raw = record.get(key, "").strip()
    if not raw:
        if default is None:
            raise ProcessRecordError(f"process record without {key}: {record}")
        return default
    try:
        return int(raw)
    except ValueError:
        raise ProcessRecordError(f"process record with a bad {key}: {raw!r}") from None


def info(process_id: str, record: dict[str, str], now: int) -> DurableProcessInfo:
    """The info of one record; a field the sandbox spoiled raises `ProcessRecordError` naming
    the process and its file."""
    field = "exit"
    try:
        exit_raw = record.get("exit", "").strip()
        exit_code = number(record, "exit") if exit_raw else None
        field = "beat"
        beat = number(record, "beat", 0)
        state: ProcessState
        if exit_code is not None:
            state = "exited"
        elif now - beat > LOST_AFTER:
            state = "lost"
        else:
            state = "running"
        field = "ended_by"
        ended = record.get("ended_by", "").strip()
        ended_by: EndedBy | None = None
        if ended == "timeout":
            ended_by = "timeout"
        elif ended == "idle_timeout":
            ended_by = "idle_timeout"
        elif ended:
            raise ProcessRecordError(f"unknown value {ended[:40]!r}")
        field = "command"
        command = b64text(record.get("command", ""))
        field = "cwd"
        cwd = b64text(record.get("cwd", ""))
        field = "started"
        started_at = number(record, "started", 0)
        field = "total"
        output_bytes = number(record, "total", 0)
    except ProcessRecordError as exc:
        raise ProcessRecordError(
            f"durable process {process_id}: its record file {FILES[field]!r} is unreadable "
            f"({exc}); something in the sandbox changed it. Its other files are as they were; "
            "delete its directory to drop it"
        ) from None
    return DurableProcessInfo(
        id=process_id,
        command=command,
        cwd=cwd,
        started_at=started_at,
        state=state,
        exit_code=exit_code,
        ended_by=ended_by,
        output_bytes=output_bytes,
    )
