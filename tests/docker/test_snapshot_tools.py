"""A sandbox without git (the busybox image): snapshots name what to install, and leave nothing
listed or half-made in the tree."""

from __future__ import annotations

import pytest

from sandlot import SnapshotToolsMissingError
from tests.backends.docker import busybox_provider

pytestmark = pytest.mark.anyio


async def test_snapshot_without_git_names_the_missing_tool() -> None:
    async with busybox_provider().session() as sandbox:
        await sandbox.exec("echo a > a.txt", check=True)
        with pytest.raises(SnapshotToolsMissingError, match="install them") as caught:
            await sandbox.snapshot()
        assert caught.value.missing == ("git",)
        assert "git" in str(caught.value)
        with pytest.raises(SnapshotToolsMissingError):
            await sandbox.snapshots()
        assert (await sandbox.exec("ls -A", check=True)).stdout == "a.txt\n"
