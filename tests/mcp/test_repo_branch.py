"""`sandlot mcp --repo --branch` (issues 26 and 35): a refusal the client shows, a new branch per
launch with --branch-suffix auto, a path with '=' read as a path, and a bring-back that is
bounded, can be given up with a second signal, and never loses commits to a taken branch."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from mcp import Client

from tests.mcp.support import start, stdio_params, wait_for
from tests.mcp.test_stdio import _call, _initialize

pytestmark = pytest.mark.anyio


def _git(repo: Path, *args: str) -> str:
    git_env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
               "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, env=git_env,
                          capture_output=True, text=True).stdout


def _repo(path: Path) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    (path / "README").write_text("v1\n")
    _git(path, "add", "README")
    _git(path, "commit", "-qm", "base")
    return path


_COMMIT = ("echo v2 > README && git -c user.name=agent -c user.email=agent@example.org "
           "commit -qam 'agent: v2'")


async def test_an_existing_branch_is_an_initialize_failure_the_client_sees(
    tmp_path: Path,
) -> None:
    repo = _repo(tmp_path / "svc")
    _git(repo, "branch", "sandlot/agent-1")
    with pytest.raises(BaseException) as caught:  # the SDK's McpError, maybe grouped
        async with Client(stdio_params("--repo", str(repo), "--branch", "sandlot/agent-1")):
            pass
    shown = repr(caught.value)
    assert "already exists" in shown and "--branch-suffix auto" in shown, shown
    with pytest.raises(BaseException) as missing:  # a repository that is not there: the same
        async with Client(stdio_params("--repo", str(tmp_path / "nowhere"))):
            pass
    assert "is not a directory" in repr(missing.value), repr(missing.value)


async def test_branch_suffix_auto_makes_a_new_branch_each_launch(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "svc")
    for _ in range(2):  # the same configuration, launched twice (within one second, too)
        params = stdio_params("--repo", str(repo), "--branch", "sandlot/agent-1",
                              "--branch-suffix", "auto")
        async with Client(params) as client:
            done = await client.call_tool("bash", {"command": _COMMIT})
            assert not done.is_error
    made = _git(repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/sandlot/").split()
    assert len(made) == 2 and all(b.startswith("sandlot/agent-1-20") for b in made), made
    for branch in made:
        assert _git(repo, "log", "-1", "--format=%s", branch).strip() == "agent: v2"


async def test_a_repo_path_with_an_equals_sign_is_a_path(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "name=svc")
    params = stdio_params("--repo", str(repo), "--branch", "sandlot/eq")
    async with Client(params) as client:
        done = await client.call_tool("bash", {"command": _COMMIT})
        assert not done.is_error
    assert _git(repo, "log", "-1", "--format=%s", "sandlot/eq").strip() == "agent: v2"


async def test_a_branch_taken_meanwhile_goes_to_a_rescue_ref(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "svc")
    async with Client(stdio_params("--repo", str(repo), "--branch", "sandlot/race")) as client:
        done = await client.call_tool("bash", {"command": (
            f"git -C {repo} branch sandlot/race && {_COMMIT}")})  # a local sandbox reaches it
        assert not done.is_error
    rescue = _git(repo, "for-each-ref", "--format=%(refname)", "refs/sandlot/rescue/").strip()
    assert rescue.startswith("refs/sandlot/rescue/sandlot/race-")
    assert _git(repo, "log", "-1", "--format=%s", rescue).strip() == "agent: v2"


def _stalling_session(repo: Path, *flags: str) -> subprocess.Popen[str]:
    """A server whose bring-back stalls: the sandbox repository's clean filter sleeps."""
    proc = start("--repo", str(repo), "--branch", "sandlot/stall", "--commit-uncommitted", "left",
                 *flags)
    wait_for(proc, r"serving MCP on stdio")
    _initialize(proc)
    answer = _call(proc, 2, "bash", {"command": (
        "echo '* filter=slow' > .gitattributes && git config filter.slow.clean 'sleep 600' && "
        "echo x > new.txt")})
    assert answer["result"]["structuredContent"]["exit_code"] == 0, answer
    return proc


def _ends_within(proc: subprocess.Popen[str], seconds: float) -> str:
    try:
        proc.wait(timeout=seconds)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.stderr is not None
    return proc.stderr.read()


async def test_a_stalling_bring_back_on_eof_is_bounded_and_said(tmp_path: Path) -> None:
    proc = _stalling_session(_repo(tmp_path / "svc"), "--bring-back-timeout", "3")
    assert proc.stdin is not None
    proc.stdin.close()
    started = time.monotonic()
    err = _ends_within(proc, 90)  # the old bring-back waited as long as the sandbox's git
    assert proc.returncode == 0, err
    assert time.monotonic() - started < 90
    assert "could not bring the commits back" in err or "gave up" in err, err
    assert "closing sandbox" in err


async def test_a_second_sigterm_gives_the_bring_back_up(tmp_path: Path) -> None:
    proc = _stalling_session(_repo(tmp_path / "svc"), "--bring-back-timeout", "600")
    proc.send_signal(signal.SIGTERM)
    wait_for(proc, r"bringing the commits back")
    proc.send_signal(signal.SIGTERM)
    err = _ends_within(proc, 60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "giving up bringing the commits back" in err and "closing sandbox" in err, err


def test_the_refusal_answers_whatever_request_the_client_opens_with(tmp_path: Path) -> None:
    # A 2026-protocol client opens with server/discover and waits 10 s for its answer before
    # it tries initialize: the refusal must answer that first request, not sit it out.
    repo = _repo(tmp_path / "svc")
    _git(repo, "branch", "sandlot/agent-1")
    proc = start("--repo", str(repo), "--branch", "sandlot/agent-1")
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write('{"jsonrpc": "2.0", "method": "notifications/hello"}\n'
                     '{"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {}}\n')
    proc.stdin.flush()
    try:
        answer = json.loads(proc.stdout.readline())
    finally:
        proc.stdin.close()
        proc.wait(30)
    assert answer["id"] == 7 and "already exists" in answer["error"]["message"], answer
