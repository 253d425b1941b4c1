"""`sandlot run` as a user runs it: one line from repository to branch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .conftest import host_repo, run  # noqa: F401 -- the fixture is used by name

REPO = Path(__file__).resolve().parents[2]


def _sandlot(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    return subprocess.run([sys.executable, "-m", "sandlot", "run", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_run_brings_the_commits_back_and_exits_with_the_command(host_repo: Path) -> None:  # noqa: F811
    done = _sandlot(host_repo, "--branch", "sandlot/fix-1", "--",
                    "echo fixed >> README.md && git commit -qam 'fix readme' && exit 3")
    assert done.returncode == 3, done.stderr
    assert "1 commit(s) came back as branch sandlot/fix-1" in done.stderr
    assert "fix readme" in done.stderr and "M README.md" in done.stderr
    assert run(host_repo, "show", "sandlot/fix-1:README.md") == "hello\nfixed\n"
    assert (host_repo / "README.md").read_text() == "hello\n"  # the work tree is untouched


def test_run_commits_leftovers_when_asked_and_refuses_an_existing_branch(
    host_repo: Path,  # noqa: F811
) -> None:
    done = _sandlot(host_repo, "--branch", "sandlot/fmt", "--commit-uncommitted", "format",
                    "--", "echo x > new.txt")
    assert done.returncode == 0, done.stderr
    assert run(host_repo, "log", "-1", "--format=%s", "sandlot/fmt").strip() == "format"
    again = _sandlot(host_repo, "--branch", "sandlot/fmt", "--", "true")
    assert again.returncode == 125
    assert "already exists" in again.stderr and "force" in again.stderr


def test_run_outside_a_repository_says_so(tmp_path: Path) -> None:
    done = _sandlot(tmp_path, "--branch", "x", "--", "true")
    assert done.returncode == 125
    assert "is not in a git repository" in done.stderr
