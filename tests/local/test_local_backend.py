"""What only the local backend promises: temp worktrees, on_close, bubblewrap isolation."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import sandlot
from sandlot import ConfigurationError, ToolNotFoundError
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio


async def test_worktree_is_a_fresh_temp_dir_removed_on_close(tmp_path: Path) -> None:
    provider = sandlot.local(root=str(tmp_path))
    async with provider.session() as one, provider.session() as two:
        assert one.worktree != two.worktree
        assert Path(one.worktree).parent == tmp_path.resolve()
        assert os.listdir(one.worktree) == []
        worktree = one.worktree
    assert not Path(worktree).exists()


async def test_on_close_leave_keeps_the_worktree(tmp_path: Path) -> None:
    async with sandlot.local(root=str(tmp_path), on_close="leave").session() as sandbox:
        await sandbox.exec("echo kept > marker", check=True)
    assert (Path(sandbox.worktree) / "marker").read_text() == "kept\n"


async def test_bad_options() -> None:
    with pytest.raises(ConfigurationError, match="not a directory"):
        await sandlot.local(root="/no/such/root").create()
    with pytest.raises(ValueError, match="on_close"):
        sandlot.local(on_close="stop")  # type: ignore[arg-type]


async def test_missing_bwrap_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolNotFoundError, match="apt-get install bubblewrap"):
        await sandlot.local(isolation="bwrap").create()


async def test_bwrap_host_is_read_only_worktree_writable_no_network() -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    # Not under /tmp: the sandbox gets a private /tmp, which would hide the file anyway.
    host_dir = Path(tempfile.mkdtemp(dir="/var/tmp"))
    outside = host_dir / "outside.txt"
    outside.write_text("original")
    async with sandlot.local(isolation="bwrap").session() as sandbox:
        denied = await sandbox.exec(["sh", "-c", f"echo changed > '{outside}'"])
        assert denied.exit_code != 0
        assert "Read-only file system" in denied.stderr
        assert outside.read_text() == "original"
        assert (await sandbox.exec("echo ok > inside && cat inside")).stdout == "ok\n"
        # Only loopback exists in a fresh network namespace.
        links = await sandbox.exec("cat /proc/net/dev")
        names = {line.split(":")[0].strip() for line in links.stdout.splitlines()[2:]}
        assert names == {"lo"}
        # Our own processes are invisible: a private PID namespace.
        pids = await sandbox.exec("ls /proc | grep -c '^[0-9]'")
        assert int(pids.stdout) < 10
    shutil.rmtree(host_dir)
