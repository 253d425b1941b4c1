"""Work-tree snapshots: record a sandbox's tree, list, restore and compare, on every backend.

    snap = await sandbox.snapshot(label="before the refactor")
    ...                                   # the agent wrecks the tree
    print((await sandbox.snapshot_diff(snap)).text)
    await sandbox.restore(snap)

The store is a git repository of sandlot's own in `<worktree>/.sandlot/snapshots`, never the
user's (adr/0046); the sandbox needs sh and git.
"""

from .models import Snapshot, SnapshotChange, SnapshotDiff
from .store import DIFF_LIMIT

__all__ = ["DIFF_LIMIT", "Snapshot", "SnapshotChange", "SnapshotDiff"]
