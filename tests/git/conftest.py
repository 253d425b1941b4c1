from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest

from sandlot import IsolatedSandboxProvider, Sandbox


@pytest.fixture(scope="session")
def git_provider(backend: ModuleType, provider: IsolatedSandboxProvider) -> IsolatedSandboxProvider:
    """The backend's provider, with git in its sandboxes (docker: the toolchain image, which
    lends the host's /usr)."""
    if backend.NAME == "docker":
        made: IsolatedSandboxProvider = backend.toolchain_provider()
        return made
    return provider


@pytest.fixture
async def git_sandbox(git_provider: IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    async with git_provider.session() as made:
        yield made


def run(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    import os

    base = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    base.update({"GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
                 "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
                 "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(repo.parent)})
    base.update(env or {})
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, env=base,
                          check=False)
    assert done.returncode == 0, (args, done.stderr.decode())
    return done.stdout.decode()


@pytest.fixture
def host_repo(tmp_path: Path) -> Path:
    """A host repository with text, a binary, an executable, unicode and space in names."""
    repo = tmp_path / "host"
    repo.mkdir()
    run(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("hello\n")
    (repo / "data.bin").write_bytes(bytes(range(256)) * 4)
    (repo / "run.sh").write_text("#!/bin/sh\necho run\n")
    (repo / "run.sh").chmod(0o755)
    (repo / "dir with space").mkdir()
    (repo / "dir with space" / "naïve — file.txt").write_text("unicode\n")
    (repo / "old-name.txt").write_text("to be renamed\n" * 20)
    (repo / "gone.txt").write_text("to be deleted\n")
    (repo / ".gitignore").write_text("*.log\n")
    run(repo, "add", "-A")
    run(repo, "commit", "-q", "-m", "initial")
    return repo
