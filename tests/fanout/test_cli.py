"""`sandlot fanout` as a user runs it: a real subprocess, its exit status, its JSON report, and
what Ctrl-C does (once: everything closed, exit 130; twice: the sandboxes still open are named
with how to find them)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sandlot.testing import AgentSpec, FakeCoderDeployment

REPO = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO / "src")
    env.pop("SANDLOT_PROVIDER", None)
    return env


def _start(*args: str, cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "sandlot", "fanout", *args],
        cwd=cwd, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def _wait_for_lines(proc: subprocess.Popen[str], needle: str, count: int) -> list[str]:
    seen: list[str] = []
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    while sum(needle in line for line in seen) < count:
        line = proc.stderr.readline()
        assert line, f"fanout ended early: {''.join(seen)}"
        seen.append(line)
        assert time.monotonic() < deadline, "".join(seen)
    return seen


def test_exit_status_and_report(tmp_path: Path) -> None:
    report = tmp_path / "out" / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sandlot", "fanout", "-n", "3", "--report", str(report), "--",
         "echo try $SANDLOT_FANOUT_INDEX $SANDLOT_FANOUT_LABEL; exit $SANDLOT_FANOUT_INDEX"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 1, proc.stderr
    data = json.loads(report.read_text())
    assert data["counts"] == {"done": 1, "failed": 2} and not data["ok"]
    tails = [s["command"]["stdout_tail"] for s in data["sandboxes"]]
    assert tails == [f"try {i} local-{i}\n" for i in range(3)]
    assert [s["command"]["exit_code"] for s in data["sandboxes"]] == [0, 1, 2]
    assert all(s["closed"] and s["on_close"] == "delete" for s in data["sandboxes"])
    assert data["sandboxes"][1]["error"]["type"] == "CommandFailed"
    assert "fan-out finished" in proc.stderr and "exit status 2" in proc.stderr
    for entry in data["sandboxes"]:  # the local worktrees are gone
        assert not (Path(tempfile.gettempdir()) / entry["sandbox"]).exists()


def test_all_succeed_exit_zero(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "data.txt").write_text("payload\n")
    proc = subprocess.run(
        [sys.executable, "-m", "sandlot", "fanout", "-n", "2", "-q", "--copy-in",
         str(tmp_path / "src"), "--", "cat", "data.txt"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "2 done" in proc.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    for args in (["-n", "0", "--", "true"], ["-n", "2"], ["-n", "2", "--env", "X", "--", "true"]):
        proc = subprocess.run(
            [sys.executable, "-m", "sandlot", "fanout", *args], cwd=tmp_path, env=_env(),
            capture_output=True, text=True, timeout=60, check=False,
        )
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.startswith("sandlot fanout: "), proc.stderr


def test_ctrl_c_ends_every_command_and_closes_every_sandbox(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    proc = _start("-n", "3", "--report", str(report), "--", "sleep 300", cwd=tmp_path)
    _wait_for_lines(proc, " running ", 3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    data = json.loads(report.read_text())
    assert data["cancelled"] and data["counts"] == {"cancelled": 3}
    assert all(s["closed"] for s in data["sandboxes"])
    assert "may be left" not in err
    for entry in data["sandboxes"]:
        assert not (Path(tempfile.gettempdir()) / entry["sandbox"]).exists()


def test_second_ctrl_c_names_what_may_be_left(tmp_path: Path) -> None:
    with FakeCoderDeployment(tmp_path / "deployment") as fake:
        fake.add_template("t", agents=[AgentSpec("main")])
        exe = fake.install(tmp_path / "bin")
        config = json.dumps({
            "type": "coder", "template": "t", "on_close": "delete", "coder_binary": str(exe),
            "coder_url": fake.url, "session_token": fake.token,
        })
        proc = _start("-n", "2", "--provider-config", config, "--", "sleep 300", cwd=tmp_path)
        _wait_for_lines(proc, " running ", 2)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.05)  # `coder delete` of each workspace is still running
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert "still closing these sandboxes" in err
        assert "] coder-0: " in err or "] coder-1: " in err, err
        assert "coder list" in err and "sandlot gc" in err
        assert "cleanup goes on" in err
        assert fake.workspaces() == []  # the cleanup did go on
        assert fake.token not in err


def test_third_ctrl_c_abandons_cleanup_and_says_what_may_be_left(tmp_path: Path) -> None:
    with FakeCoderDeployment(tmp_path / "deployment") as fake:
        fake.add_template("t", agents=[AgentSpec("main")])
        exe = fake.install(tmp_path / "bin")
        config = json.dumps({
            "type": "coder", "template": "t", "on_close": "delete", "coder_binary": str(exe),
            "coder_url": fake.url, "session_token": fake.token,
        })
        proc = _start("-n", "2", "--provider-config", config, "--", "sleep 300", cwd=tmp_path)
        _wait_for_lines(proc, " running ", 2)
        for _ in range(3):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.02)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert "cleanup abandoned; these sandboxes may be left" in err
        assert "coder list" in err
        # What was abandoned is still findable, and removable, with the deployment's CLI.
        deadline = time.monotonic() + 60
        while fake.workspaces() and time.monotonic() < deadline:
            for ws in fake.workspaces():
                subprocess.run([str(exe), "delete", ws["name"], "--yes"], env={
                    **os.environ, **fake.env()}, capture_output=True, check=False)
            time.sleep(0.5)
        assert fake.workspaces() == []


def test_repo_each_sandbox_commits_come_back_as_its_own_branch(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git_env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
               "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org"}
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "base"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=git_env)
    report = tmp_path / "report.json"
    proc = subprocess.run(
        [sys.executable, "-m", "sandlot", "fanout", "-n", "3", "--repo", str(repo),
         "--branch-prefix", "try/", "--commit-uncommitted", "attempt", "--report", str(report),
         "--", "echo $SANDLOT_FANOUT_INDEX > answer.txt; test $SANDLOT_FANOUT_INDEX != 2"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300, check=False,
    )
    assert proc.returncode == 1, proc.stderr  # sandbox 2's command failed
    for index in range(3):  # ... and still, every sandbox's work came back
        shown = subprocess.run(["git", "-C", str(repo), "show", f"try/{index}:answer.txt"],
                               capture_output=True, text=True, check=True)
        assert shown.stdout == f"{index}\n"
    data = json.loads(report.read_text())
    assert [s["git"]["branch"] for s in data["sandboxes"]] == ["try/0", "try/1", "try/2"]
    assert data["sandboxes"][0]["git"]["commits"] == ["attempt"]
    assert "[1] branch try/1: 1 commit(s)" in proc.stderr
    head = subprocess.run(["git", "-C", str(repo), "symbolic-ref", "HEAD"], capture_output=True,
                          text=True, check=True).stdout
    assert head == "refs/heads/main\n"


def test_repo_with_a_bad_branch_prefix_makes_no_sandbox(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    proc = subprocess.run(
        [sys.executable, "-m", "sandlot", "fanout", "-n", "2", "--repo", str(repo),
         "--branch-prefix", "bad..name", "--", "true"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 1
    assert "not a valid branch name" in proc.stderr
    assert "creating" not in proc.stderr


def test_sigterm_stops_like_ctrl_c_and_exits_128_plus_it(tmp_path: Path) -> None:
    """The one signal policy (sandlot._interrupts): the status names the signal (it was 130
    whatever the signal)."""
    report = tmp_path / "report.json"
    proc = _start("-n", "2", "--report", str(report), "--", "sleep 300", cwd=tmp_path)
    _wait_for_lines(proc, " running ", 2)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 128 + signal.SIGTERM, err
    data = json.loads(report.read_text())
    assert data["cancelled"] and data["counts"] == {"cancelled": 2}
    assert all(s["closed"] for s in data["sandboxes"])
