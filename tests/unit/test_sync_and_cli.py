from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import sandlot
import sandlot.sync
from sandlot import CommandFailed, SandboxClosed


def test_sync_session(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("data")
    lines: list[str] = []
    with sandlot.sync.session(sandlot.local()) as sandbox:
        result = sandbox.exec("echo one; echo two", on_stdout=lines.append)
        assert result.stdout == "one\ntwo\n" and lines == ["one", "two"]
        sandbox.copy_in(tmp_path / "f.txt", f"{sandbox.worktree}/g.txt")
        assert sandbox.exec(["cat", "g.txt"]).stdout == "data"
        sandbox.copy_out(f"{sandbox.worktree}/g.txt", tmp_path / "back.txt")
        process = sandbox.start("sleep 300")
        assert not process.done
        assert process.kill().exit_code == 137
        try:
            sandbox.exec("exit 3", check=True)
        except CommandFailed as exc:
            assert exc.exit_code == 3
        worktree = sandbox.worktree
        inner = sandbox.sandbox
    assert (tmp_path / "back.txt").read_text() == "data"
    assert not Path(worktree).exists()
    assert inner.closed
    try:
        with sandlot.sync.session(sandlot.local()) as sandbox:
            sandbox.close()
            sandbox.exec("true")
    except SandboxClosed:
        pass
    else:
        raise AssertionError("exec after close did not raise")


def test_sync_session_has_idle_timeout_and_durable_processes() -> None:
    with sandlot.sync.session(sandlot.local()) as sandbox:
        silent = sandbox.exec("echo up; sleep 600", idle_timeout=1)
        assert silent.timed_out_by == "idle_timeout" and silent.stdout == "up\n"
        assert sandbox.start("sleep 600", idle_timeout=1).wait().timed_out_by == "idle_timeout"
        process = sandbox.processes.start("for i in 1 2 3; do echo $i; sleep 0.2; done; exit 5")
        again = sandbox.processes.get(process.id)
        assert b"".join(chunk.data for chunk in again.follow()) == b"1\n2\n3\n"
        assert again.wait(timeout=30).exit_code == 5
        assert [info.id for info in sandbox.processes.list()] == [process.id]
        held = sandbox.processes.start("sleep 600")
        assert held.signal("TERM") and held.wait(timeout=30).exit_code == 143
        process.remove()
        held.remove()
        assert sandbox.processes.list() == []


def _sandlot(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandlot", *args], capture_output=True, text=True, timeout=120
    )


def test_cli_exec_streams_and_exits_with_the_command_code(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from the host\n")
    run = _sandlot("exec", "--copy-in", str(tmp_path), "--", "cat hello.txt; exit 7")
    assert run.returncode == 7
    assert run.stdout == "hello from the host\n"
    assert "copying" in run.stderr and "exit code 7" in run.stderr
    argv = _sandlot("exec", "-q", "--env", "X=a b", "--", "printenv", "X")
    assert (argv.returncode, argv.stdout, argv.stderr) == (0, "a b\n", "")


def test_cli_help_and_errors() -> None:
    top = _sandlot("--help")
    assert top.returncode == 0 and "exec" in top.stdout
    assert "--copy-in" in _sandlot("exec", "--help").stdout
    missing = _sandlot("exec", "--copy-in", "/no/such/dir", "--", "true")
    assert missing.returncode == 125  # sandlot refused it: not the command's status
    assert "host path does not exist" in missing.stderr
    assert _sandlot("exec", "--timeout", "0.5", "-q", "--", "sleep 30").returncode == 124


def test_cli_exec_idle_timeout_ends_a_silent_command() -> None:
    run = _sandlot("exec", "--idle-timeout", "1", "--", "echo up; sleep 60")
    assert run.returncode == 124
    assert run.stdout == "up\n"
    assert "printed nothing for 1.0s (--idle-timeout)" in run.stderr
