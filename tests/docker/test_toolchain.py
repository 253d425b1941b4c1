"""The toolchain image: the host's toolchains lent read-only, for higher-level tests."""

from __future__ import annotations

import pytest

from tests.backends import docker as docker_backend
from tests.helpers import require

pytestmark = pytest.mark.anyio


async def test_toolchains_run_inside_and_stay_read_only() -> None:
    require(docker_backend.HAS_TOOLCHAINS, "host toolchains (go, cargo, node, pyenv) missing")
    async with docker_backend.toolchain_provider().session() as sandbox:
        result = await sandbox.exec(
            "go version && cargo --version && node --version && python3 --version", timeout=120
        )
        assert result.exit_code == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0].startswith("go version go")
        assert lines[1].startswith("cargo ")
        assert lines[2].startswith("v")
        assert lines[3].startswith("Python 3.")
        # The lent directories are read-only; the worktree is the container's own.
        denied = await sandbox.exec("touch /usr/sandlot-probe")
        assert denied.exit_code != 0
        ran = await sandbox.exec(
            ["sh", "-c", 'python3 -c "print(6 * 7)" && node -e "console.log(6 * 7)"'], timeout=120
        )
        assert ran.stdout == "42\n42\n", ran.stderr
