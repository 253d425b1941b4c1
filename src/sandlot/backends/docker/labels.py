"""The labels that mark a container as sandlot's, and who made it.

`sandlot gc` reads them to find containers a crashed program left behind: the on_close the
program asked for, when the container was made, and which process made it (host, pid and the
pid's start time, so a reused pid is not mistaken for the owner).
"""

from __future__ import annotations

import os
import socket
from datetime import UTC, datetime

MANAGED = "sandlot.managed"
CREATED = "sandlot.created"
ON_CLOSE = "sandlot.on_close"
OWNER = "sandlot.owner"
SESSION = "sandlot.session"

def _start_ticks(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()
    return fields[19].decode() if len(fields) > 19 else None


def owner_token() -> str:
    """`host/pid/start-ticks` of this process."""
    return f"{socket.gethostname()}/{os.getpid()}/{_start_ticks(os.getpid()) or '?'}"


def owner_alive(token: str) -> bool | None:
    """Whether the owning process still runs: True/False on this host, None when unknowable."""
    parts = token.split("/")
    if len(parts) != 3 or parts[0] != socket.gethostname() or not parts[1].isdigit():
        return None
    ticks = _start_ticks(int(parts[1]))
    return ticks is not None and (parts[2] == "?" or ticks == parts[2])


def make(on_close: str, session: str) -> dict[str, str]:
    return {
        MANAGED: "true",
        CREATED: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        ON_CLOSE: on_close,
        OWNER: owner_token(),
        SESSION: session,
    }


def parse_created(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
