"""The snapshot tools: snapshot_create, snapshot_list, snapshot_restore, snapshot_diff.

Each acts on one workspace root (the `workspace` argument, as the file tools): a snapshot
taken of a workspace is listed, restored and compared only through that workspace. A
read-only toolbox offers list and diff; create and restore write to the sandbox. After a
restore, the files read before no longer count as read (their contents may have changed), so
write and edit ask for a fresh read.
"""

from __future__ import annotations

import time

from ..errors import ToolError
from ..snapshots import Snapshot
from ..workspaces import Workspace
from .base import ToolboxBase
from .snapshot_models import (
    SnapshotChangeInfo,
    SnapshotCreateResult,
    SnapshotDiffResult,
    SnapshotInfo,
    SnapshotListResult,
    SnapshotRestoreResult,
)


def _info(snap: Snapshot) -> SnapshotInfo:
    return SnapshotInfo(id=snap.id, label=snap.label, created=snap.created, files=snap.files,
                        size=snap.size)


def _line(snap: Snapshot) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(snap.created))
    label = f" {snap.label!r}" if snap.label else ""
    return f"{snap.id}  {when}  {snap.files} files, {snap.size} bytes{label}"


class SnapshotTools(ToolboxBase):
    """Snapshots of a workspace root, as agent tools."""

    async def _workspace_snapshot(self, tool: str, ws: Workspace, snapshot_id: str
                                  ) -> Snapshot:
        for snap in await self.sandbox.snapshots():
            if snap.id == snapshot_id.strip():
                if snap.roots != (ws.root,):
                    raise ToolError(f"{tool}: snapshot {snap.id} is not of workspace "
                                    f"{ws.name}; see snapshot_list in that workspace")
                return snap
        raise ToolError(f'{tool}: no snapshot "{snapshot_id.strip()}" in workspace {ws.name}; '
                        "see snapshot_list")

    async def snapshot_create(self, label: str | None = None, *,
                              workspace: str | None = None) -> SnapshotCreateResult:
        """Record the workspace root's files (the sandbox's `snapshot(paths=[root])`)."""
        self._mutating("snapshot_create")
        ws = self.workspaces.choose(workspace)
        snap = await self.sandbox.snapshot(label=label, paths=[ws.root])
        return SnapshotCreateResult(
            tool="snapshot_create", workspace=ws.name, snapshot=_info(snap),
            text=f"Snapshot {snap.id} of workspace {ws.name}: {snap.files} files, {snap.size} "
                 f'bytes. Restore it with snapshot_restore(snapshot_id="{snap.id}").')

    async def snapshot_list(self, *, workspace: str | None = None) -> SnapshotListResult:
        """The workspace's snapshots, oldest first."""
        ws = self.workspaces.choose(workspace)
        found = [s for s in await self.sandbox.snapshots() if s.roots == (ws.root,)]
        text = "\n".join(_line(s) for s in found) or f"No snapshots of workspace {ws.name}."
        return SnapshotListResult(tool="snapshot_list", workspace=ws.name,
                                  snapshots=[_info(s) for s in found], text=text)

    async def snapshot_restore(self, snapshot_id: str, force: bool = False, *,
                               workspace: str | None = None) -> SnapshotRestoreResult:
        """Put the workspace back as the snapshot recorded it."""
        self._mutating("snapshot_restore")
        ws = self.workspaces.choose(workspace)
        snap = await self._workspace_snapshot("snapshot_restore", ws, snapshot_id)
        await self.sandbox.restore(snap, force=force)
        self.tracker.forget_under(ws.root)
        return SnapshotRestoreResult(
            tool="snapshot_restore", workspace=ws.name, snapshot_id=snap.id,
            text=f"Workspace {ws.name} restored to snapshot {snap.id}. Files read before no "
                 "longer count as read: read a file again before writing or editing it.")

    async def snapshot_diff(self, snapshot_id: str, *,
                            workspace: str | None = None) -> SnapshotDiffResult:
        """The workspace now against the snapshot: changed paths and a patch (its head)."""
        ws = self.workspaces.choose(workspace)
        snap = await self._workspace_snapshot("snapshot_diff", ws, snapshot_id)
        diff = await self.sandbox.snapshot_diff(snap)
        limit = self.bash_output_bytes
        patch = diff.patch[:limit].decode("utf-8", errors="replace")
        truncated = len(diff.patch) > limit
        changes = [SnapshotChangeInfo(status=c.status, path=c.path.encode(
            "utf-8", "surrogateescape").decode("utf-8", "replace")) for c in diff.changes]
        if not changes:
            text = f"Workspace {ws.name} is as snapshot {snap.id} recorded it."
        else:
            text = "\n".join(f"{c.status} {c.path}" for c in changes) + "\n\n" + patch
            if truncated:
                text += (f"\n[patch cut: showing its first {limit} of {len(diff.patch)} "
                         "bytes]")
        return SnapshotDiffResult(tool="snapshot_diff", workspace=ws.name,
                                  snapshot_id=snap.id, changes=changes, patch=patch,
                                  truncated=truncated, text=text)
