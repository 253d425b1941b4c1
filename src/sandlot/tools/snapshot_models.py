"""Arguments and results of the snapshot tools (snapshot_tools.py), as pydantic models."""

from __future__ import annotations

from pydantic import BaseModel, Field

from .models import _WORKSPACE, ToolResult, _Args

_ID = "The snapshot's id, as snapshot_create or snapshot_list gave it (12 hex digits)."


class SnapshotCreateArgs(_Args):
    """Record the workspace's files so they can be restored later."""

    label: str | None = Field(default=None, max_length=1000,
                              description="A short note saying what state this is, e.g. "
                                          "'tests pass, before refactoring parser'.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class SnapshotListArgs(_Args):
    """List the workspace's snapshots."""

    workspace: str | None = Field(default=None, description=_WORKSPACE)


class SnapshotRestoreArgs(_Args):
    """Put the workspace's files back as a snapshot recorded them."""

    snapshot_id: str = Field(description=_ID)
    force: bool = Field(default=False, description="Restore even while a process still "
                        "works in the workspace (a background shell, a server).")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class SnapshotDiffArgs(_Args):
    """Compare the workspace now with a snapshot."""

    snapshot_id: str = Field(description=_ID)
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class SnapshotInfo(BaseModel):
    id: str
    label: str | None
    created: float = Field(description="Seconds since the epoch.")
    files: int
    size: int = Field(description="Bytes of file contents.")


class SnapshotChangeInfo(BaseModel):
    status: str = Field(description="A added since, D deleted since, M modified, T type "
                                    "changed.")
    path: str


class SnapshotCreateResult(ToolResult):
    workspace: str
    snapshot: SnapshotInfo


class SnapshotListResult(ToolResult):
    workspace: str
    snapshots: list[SnapshotInfo]


class SnapshotRestoreResult(ToolResult):
    workspace: str
    snapshot_id: str


class SnapshotDiffResult(ToolResult):
    workspace: str
    snapshot_id: str
    changes: list[SnapshotChangeInfo]
    patch: str
    truncated: bool = False
