"""Reading the `key=value` records the process scripts print."""

from __future__ import annotations

import base64
import binascii

from ..errors import ProcessRecordError as ProcessRecordError  # its home until errors.py
from .models import DurableProcessInfo, EndedBy, ProcessState

#: Seconds without a beat after which a process with no exit status counts as lost. The
#: supervisor beats every second; the margin covers a loaded machine.
LOST_AFTER = 15


def records(text: str) -> list[dict[str, str]]:
    """`key=value` lines, split into records at `--` lines."""
    found: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
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
        return base64.b64decode(value, validate=False).decode("utf-8", "surrogateescape")
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
    exit_raw = record.get("exit", "").strip()
    exit_code = number(record, "exit") if exit_raw else None
    state: ProcessState
    if exit_code is not None:
        state = "exited"
    elif now - number(record, "beat", 0) > LOST_AFTER:
        state = "lost"
    else:
        state = "running"
    ended = record.get("ended_by", "").strip()
    ended_by: EndedBy | None = None
    if ended == "timeout":
        ended_by = "timeout"
    elif ended == "idle_timeout":
        ended_by = "idle_timeout"
    return DurableProcessInfo(
        id=process_id,
        command=b64text(record.get("command", "")),
        cwd=b64text(record.get("cwd", "")),
        started_at=number(record, "started", 0),
        state=state,
        exit_code=exit_code,
        ended_by=ended_by,
        output_bytes=number(record, "total", 0),
    )
