"""`sandlot mcp` over stdio, as an agent launches it: the mcp SDK's client (and raw JSON-RPC
lines where the test must own the pipes), workspaces copied in, and every way the server
ends applying the provider's on_close."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from sandlot.testing import AgentSpec, FakeCoderDeployment
from tests.mcp.support import start, stdio_params, wait_for

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def _project(tmp_path: Path) -> Path:
    src = tmp_path / "app"
    src.mkdir()
    (src / "main.py").write_text("print('hi')\n")
    return src


async def test_a_stdio_client_works_in_copied_workspaces(tmp_path: Path) -> None:
    app = _project(tmp_path)
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "util.py").write_text("X = 1\n")
    params = stdio_params("--workspace", f"app={app}", "--workspace", f"lib={lib}")
    async with Client(params) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert len(names) == 23 and names[0] == "read" and "run_code" in names
        read = await client.call_tool("read", {"path": "main.py", "workspace": "app"})
        assert text(read) == "     1\tprint('hi')"
        unnamed = await client.call_tool("read", {"path": "util.py"})
        assert unnamed.is_error and "2 workspaces configured (app, lib)" in text(unnamed)
        escape = await client.call_tool("read", {"path": "../lib/util.py", "workspace": "app"})
        assert escape.is_error
        assert escape.structured_content["error"] == "PathOutsideWorkspaceError"
        wrote = await client.call_tool("write", {"path": "out.txt", "content": "made\n",
                                                 "workspace": "lib"})
        assert not wrote.is_error, text(wrote)
        where = await client.call_tool("bash", {"command": "pwd", "workspace": "lib"})
        root = where.structured_content["stdout"].strip()
    # The copies were the sandbox's; the host's directories are as they were.
    assert not (lib / "out.txt").exists()
    assert not os.path.exists(root), "the local sandbox outlived the server"


def _initialize(proc: subprocess.Popen[str]) -> dict[str, Any]:
    """The MCP handshake by hand (what every client sends first)."""
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "test", "version": "0"}},
    }) + "\n")
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
    proc.stdin.flush()
    answer: dict[str, Any] = json.loads(proc.stdout.readline())
    return answer


def _call(proc: subprocess.Popen[str], ident: int, name: str, arguments: dict[str, Any]
          ) -> dict[str, Any]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call",
                                 "params": {"name": name, "arguments": arguments}}) + "\n")
    proc.stdin.flush()
    while True:
        message: dict[str, Any] = json.loads(proc.stdout.readline())
        if message.get("id") == ident:
            return message


def _finish(proc: subprocess.Popen[str]) -> str:
    """Wait for the server to end; its remaining stderr."""
    proc.wait(timeout=120)
    assert proc.stderr is not None
    return proc.stderr.read()


def _sandbox_root(proc: subprocess.Popen[str]) -> str:
    answer = _call(proc, 2, "bash", {"command": "pwd"})
    root: str = answer["result"]["structuredContent"]["stdout"].strip()
    return root


@pytest.mark.parametrize("how", ["eof", "sigterm", "sigint"])
async def test_every_ending_closes_the_local_sandbox(tmp_path: Path, how: str) -> None:
    proc = start()
    try:
        wait_for(proc, r"serving MCP on stdio")
        assert _initialize(proc)["result"]["serverInfo"]["name"] == "sandlot"
        root = _sandbox_root(proc)
        assert os.path.isdir(root)
        assert proc.stdin is not None
        if how == "eof":
            proc.stdin.close()
        else:
            proc.send_signal(signal.SIGTERM if how == "sigterm" else signal.SIGINT)
        err = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    expected = {"eof": 0, "sigterm": 128 + signal.SIGTERM, "sigint": 128 + signal.SIGINT}
    assert proc.returncode == expected[how], err
    assert "closing sandbox" in err
    assert not os.path.exists(root)


async def test_eof_removes_the_docker_container(tmp_path: Path) -> None:
    from tests.backends import docker as docker_backend

    engine = docker_backend.engine()
    config = json.dumps({"type": "docker", "image": engine.busybox_image(),
                         "on_close": "delete", "docker_host": engine.host})
    proc = start("--provider-config", config)
    try:
        named = wait_for(proc, r"serving MCP on stdio; sandbox (\S+)")
        container = named.group(1)
        _initialize(proc)
        answer = _call(proc, 2, "bash", {"command": "echo in-container"})
        assert answer["result"]["structuredContent"]["stdout"] == "in-container\n"
        assert container in engine.sandlot_containers()
        assert proc.stdin is not None
        proc.stdin.close()
        err = _finish(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert container not in engine.sandlot_containers()


async def test_sigterm_deletes_the_coder_workspace(tmp_path: Path) -> None:
    with FakeCoderDeployment(tmp_path / "deployment") as fake:
        fake.add_template("t", agents=[AgentSpec("main")])
        exe = fake.install(tmp_path / "bin")
        config = json.dumps({
            "type": "coder", "template": "t", "on_close": "delete", "coder_binary": str(exe),
            "coder_url": fake.url, "session_token": fake.token,
        })
        proc = start("--provider-config", config)
        try:
            wait_for(proc, r"serving MCP on stdio")
            _initialize(proc)
            answer = _call(proc, 2, "bash", {"command": "echo in-workspace"})
            assert answer["result"]["structuredContent"]["stdout"] == "in-workspace\n"
            assert len(fake.workspaces()) == 1
            proc.send_signal(signal.SIGTERM)
            err = _finish(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 128 + signal.SIGTERM, err
        assert fake.workspaces() == []
        assert fake.token not in err


async def test_cancelling_over_stdio_ends_the_process(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    async with Client(stdio_params()) as client:
        with anyio.move_on_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "bash",
                                 {"command": f"echo $$ > {pidfile}; exec sleep 300"})
                for _ in range(1000):
                    if pidfile.exists() and pidfile.read_text().strip():
                        break
                    await anyio.sleep(0.05)
                group.cancel_scope.cancel()
        pid = int(pidfile.read_text())
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            await anyio.sleep(0.05)
        else:
            raise AssertionError(f"process {pid} outlived the cancelled call")
        again = await client.call_tool("bash", {"command": "echo still-serving"})
        assert text(again).startswith("still-serving")


def _git(repo: Path, *args: str) -> str:
    git_env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.org",
               "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@example.org"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, env=git_env,
                          capture_output=True, text=True).stdout


async def test_repo_in_and_the_agents_commits_back_as_a_branch(tmp_path: Path) -> None:
    repo = tmp_path / "svc"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("v1\n")
    _git(repo, "add", "README")
    _git(repo, "commit", "-qm", "base")
    async with Client(stdio_params("--repo", str(repo), "--branch", "sandlot/agent")) as client:
        read = await client.call_tool("read", {"path": "README"})
        assert text(read) == "     1\tv1"
        await client.call_tool("write", {"path": "README", "content": "v2\n"})
        done = await client.call_tool("bash", {"command": (
            "git -c user.name=agent -c user.email=agent@example.org commit -qam 'agent: v2' "
            "&& git log --format=%s -1")})
        assert text(done).startswith("agent: v2"), text(done)
    assert _git(repo, "log", "--format=%s", "sandlot/agent").split("\n")[:2] == ["agent: v2",
                                                                                  "base"]
    assert (repo / "README").read_text() == "v1\n"  # the host's work tree is untouched
