"""What a durable process looks like from outside: its info and one read of its output."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

#: `running`: its supervisor beats; `exited`: it ended and its status is recorded; `lost`: it
#: has no status and its supervisor stopped beating (the sandbox restarted, or the supervisor
#: was killed), so it will never report one.
ProcessState = Literal["running", "exited", "lost"]

#: Which of the process's own limits ended it, if one did.
EndedBy = Literal["timeout", "idle_timeout"]


@dataclass(frozen=True)
class DurableProcessInfo:
    """One durable process as its files describe it."""

    id: str
    command: str
    cwd: str
    started_at: int
    """Epoch seconds (the sandbox's clock)."""
    state: ProcessState
    exit_code: int | None
    """Once exited: the status a shell reports (128+N when signal N ended it)."""
    ended_by: EndedBy | None
    output_bytes: int
    """Bytes printed so far (stdout and stderr together): the cursor of the output's end."""

    @property
    def running(self) -> bool:
        return self.state == "running"


@dataclass(frozen=True)
class OutputChunk:
    """Output from a byte cursor: pass `next` as `since=` to the following read."""

    data: bytes
    start: int
    """The cursor of `data[0]`; greater than the `since` asked for when bytes were dropped."""
    next: int
    dropped: int
    """Bytes between the asked cursor and `start` that the bounded output files no longer hold."""
    complete: bool
    """The process ended, its output is closed, and this read reached its end."""
    info: DurableProcessInfo

    @property
    def text(self) -> str:
        return self.data.decode("utf-8", "replace")
