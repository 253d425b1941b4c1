"""`sandlot fanout --repo` (issue 26, items 1 and 2): branches checked before any sandbox, the
README's command works every time, an interrupted fan-out still brings every commit back."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .conftest import host_repo, run  # noqa: F401 -- the fixture is used by name

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    return env


def _fanout(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "sandlot", "fanout", "-q", *args], cwd=cwd,
                          env=_env(), capture_output=True, text=True, timeout=300, check=False)


def _branches(repo: Path, pattern: str) -> list[str]:
    return run(repo, "for-each-ref", "--format=%(refname:short)", pattern).split()


def test_the_readme_fanout_command_works_twice(host_repo: Path) -> None:  # noqa: F811
    for _ in range(2):  # the old default prefix made the second run fail in every sandbox
        done = _fanout(host_repo, "-n", "2", "--repo", ".", "--commit-uncommitted", "attempt",
                       "--", "echo $SANDLOT_FANOUT_INDEX > answer.txt")
        assert done.returncode == 0, done.stderr
    made = _branches(host_repo, "refs/heads/sandlot/try-*")
    assert len(made) == 4, made
    for branch in made:
        assert run(host_repo, "show", f"{branch}:answer.txt").strip() == branch[-1]


def test_an_existing_branch_is_refused_before_any_sandbox_and_force_moves_it(
    host_repo: Path, tmp_path: Path  # noqa: F811
) -> None:
    run(host_repo, "branch", "try/1")
    marker = tmp_path / "ran"
    done = _fanout(host_repo, "-n", "2", "--repo", ".", "--branch-prefix", "try/", "--",
                   f"touch {marker}")
    assert done.returncode == 1, done.stderr
    assert "'try/1' already exists" in done.stderr and "creating" not in done.stderr
    assert not marker.exists()
    forced = _fanout(host_repo, "-n", "2", "--repo", ".", "--branch-prefix", "try/", "--force",
                     "--commit-uncommitted", "forced", "--", "echo x > x.txt")
    assert forced.returncode == 0, forced.stderr
    assert run(host_repo, "log", "-1", "--format=%s", "try/1").strip() == "forced"


def test_an_interrupted_fanout_brings_every_commit_back(
    host_repo: Path, tmp_path: Path  # noqa: F811
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandlot", "fanout", "-q", "-n", "2", "--repo", ".",
         "--branch-prefix", "cut/", "--",
         "echo $SANDLOT_FANOUT_INDEX > a.txt && git add a.txt && "
         f"git commit -qm 'before the signal' && touch {marks}/$SANDLOT_FANOUT_INDEX && "
         "sleep 120"],
        cwd=host_repo, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while len(list(marks.iterdir())) < 2:  # a local sandbox writes the host's tmp_path
        assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 130, err
    for index in range(2):
        assert run(host_repo, "log", "-1", "--format=%s", f"cut/{index}").strip() == \
            "before the signal", err
