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


# ---- issue 26: refusals before the sandbox, commits never lost -------------------------------


def test_run_refuses_its_inputs_before_making_a_sandbox(host_repo: Path, tmp_path: Path) -> None:  # noqa: F811
    run(host_repo, "branch", "taken")
    marker = tmp_path / "ran"
    for flags, said in [(["--branch", "taken"], "already exists"),
                        (["--branch", "bad..name"], "not a valid branch name"),
                        (["--repo", str(tmp_path / "nowhere"), "--branch", "b"],
                         "host path does not exist"),
                        (["--branch", "b", "--ref", "no-such-ref"], "does not name a commit")]:
        done = _sandlot(host_repo, *flags, "--", f"touch {marker}")
        assert done.returncode == 125, (flags, done.stderr)  # sandlot refused its input
        assert said in done.stderr, (flags, done.stderr)
        assert "creating" not in done.stderr, (flags, done.stderr)  # no sandbox was made
        assert not marker.exists(), flags


def _interrupted_run(repo: Path, branch: str, sig: int) -> tuple[int, str]:
    import signal as _signal  # noqa: F401 -- sig is one of its values

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandlot", "run", "--branch", branch, "--",
         "echo more >> README.md && git commit -qam 'before the signal' && echo started && "
         "sleep 120"],
        cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.strip() == "started":
            break
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def test_an_interrupted_run_brings_the_commits_back(host_repo: Path) -> None:  # noqa: F811
    import signal

    for sig, code in [(signal.SIGINT, 130), (signal.SIGTERM, 143)]:
        branch = f"sandlot/cut-{sig}"
        returncode, err = _interrupted_run(host_repo, branch, sig)
        assert returncode == code, err
        assert f"came back as branch {branch}" in err, err
        assert run(host_repo, "log", "-1", "--format=%s", branch).strip() == "before the signal"


def test_a_branch_taken_meanwhile_goes_to_a_rescue_ref(host_repo: Path) -> None:  # noqa: F811
    # The command itself (a local sandbox reaches the host) takes the branch after the check.
    done = _sandlot(host_repo, "--branch", "sandlot/race", "--",
                    f"git -C {host_repo} branch sandlot/race && echo more >> README.md && "
                    "git commit -qam 'agent work'")
    assert done.returncode == 0, done.stderr
    rescue = run(host_repo, "for-each-ref", "--format=%(refname)", "refs/sandlot/rescue/")
    assert rescue.startswith("refs/sandlot/rescue/sandlot/race-"), done.stderr
    ref = rescue.strip()
    assert f"came back as {ref}" in done.stderr and f"git branch NAME {ref}" in done.stderr
    assert run(host_repo, "log", "-1", "--format=%s", ref).strip() == "agent work"
    assert run(host_repo, "rev-parse", "sandlot/race") == run(host_repo, "rev-parse", "main")


def test_run_names_the_uncommitted_changes_commit(host_repo: Path) -> None:  # noqa: F811
    (host_repo / "README.md").write_text("hello\nlocal edit\n")
    done = _sandlot(host_repo, "--branch", "sandlot/inc", "--include-uncommitted", "--",
                    "echo agent > agent.txt && git add agent.txt && git commit -qm agent")
    assert done.returncode == 0, done.stderr
    assert "1 commit(s) came back as branch sandlot/inc" in done.stderr
    assert "uncommitted-changes commit" in done.stderr
    assert run(host_repo, "log", "--format=%s", "sandlot/inc").splitlines()[:2] == \
        ["agent", "sandlot: uncommitted changes brought in by push_in"]
