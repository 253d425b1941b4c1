"""The watched-process tools' arguments and results (the toolbox methods: watch_calls.py)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..processes import ProcessEvent
from .models import ToolResult

_WORKSPACE = (
    "Name of the workspace (repository root) to act in. Optional when the sandbox has one "
    "workspace; required when it has several."
)
#: How many events one watch_process_events text lists (all stay in `events`).
SHOWN = 50


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WatchProcessArgs(_Args):
    """Start a command in the background and watch it, or attach to one by id."""

    command: str | None = Field(default=None, description="The command line to start (with "
                                "`sh -c` in the workspace root). Give this or process_id.")
    process_id: str | None = Field(default=None, description="Attach to a process a previous "
                                   "watch_process started (its process_id).")
    patterns: list[str] = Field(default_factory=list, description="Regular expressions whose "
                                "matching output lines become events, besides the defaults "
                                "(Go/Rust panics, Python tracebacks, Node unhandled errors, "
                                "segmentation faults, out-of-memory kills).")
    idle_kill: float | None = Field(default=None, gt=0, le=86400, description="Seconds "
                                    "without output after which the process is ended (an "
                                    "idle_kill event). Default none.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class WatchProcessEventsArgs(_Args):
    """What a watched process did since a cursor: pattern matches, exit, idle kill."""

    process_id: str = Field(description="The process_id watch_process returned.")
    cursor: int = Field(default=0, ge=0, description="Where to continue: the cursor the last "
                        "call returned (0: from the start).")


class WatchEvent(BaseModel):
    """One event of a watched process."""

    kind: Literal["match", "exit", "idle_kill", "timeout", "lost"]
    time: float
    cursor: int
    pattern: str = ""
    line: str = ""
    exit_code: int | None = None


class WatchProcessResult(ToolResult):
    process_id: str
    command: str
    patterns: list[str] = Field(description="Every pattern in effect: the defaults' names, "
                                "then the process's own regular expressions.")
    running: bool
    cursor: int = Field(description="Pass to watch_process_events to read its events.")


class WatchEventsResult(ToolResult):
    process_id: str
    events: list[WatchEvent]
    cursor: int = Field(description="Pass as cursor next time to read on.")
    ended: bool = Field(description="The process ended and its last event is in `events` "
                        "(or was in an earlier call).")


def to_model(event: ProcessEvent) -> WatchEvent:
    return WatchEvent(kind=event.kind, time=event.time, cursor=event.cursor,
                      pattern=event.pattern, line=event.line, exit_code=event.exit_code)


def render(event: WatchEvent) -> str:
    if event.kind == "match":
        return f"[{event.pattern}] {event.line}"
    if event.kind == "exit":
        return f"exited with code {event.exit_code}"
    if event.kind == "idle_kill":
        return "ended: no output for its idle_kill seconds"
    if event.kind == "timeout":
        return "ended: its time limit passed"
    return "lost: its supervisor vanished (the sandbox restarted?); no exit status will come"
