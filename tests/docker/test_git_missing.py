"""A sandbox without git (the busybox image): push_in says what to install, and leaves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandlot import GitNotFoundError, git
from tests.backends.docker import busybox_provider
from tests.git.conftest import host_repo, run  # noqa: F401 -- the fixture is used by name

pytestmark = pytest.mark.anyio


async def test_push_in_without_git_names_the_requirement(host_repo: Path) -> None:  # noqa: F811
    async with busybox_provider().session() as sandbox:
        with pytest.raises(GitNotFoundError, match="install git in the sandbox"):
            await git.push_in(sandbox, repo=str(host_repo))
        assert (await sandbox.exec("ls -A", check=True)).stdout == ""
        with pytest.raises(GitNotFoundError):
            await git.pull_out(sandbox, repo=str(host_repo), branch="sandlot/x")
    assert "sandlot/x" not in run(host_repo, "branch", "--list")
