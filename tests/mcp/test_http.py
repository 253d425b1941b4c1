"""`sandlot mcp --http`: streamable HTTP on loopback by default, the same binding rules and
bearer-token check as `sandlot serve`, and SIGTERM closing the sandbox."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from sandlot.tools.registry import TOOLS
from tests.mcp.support import command, env, start, wait_for

pytestmark = pytest.mark.anyio

TOKEN = "t0ken-for-the-mcp-tests-0123456789"


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


def _serve(*args: str, extra_env: dict[str, str] | None = None
           ) -> tuple[subprocess.Popen[str], str]:
    proc = start("--http", "--port", "0", *args, extra_env=extra_env)
    found = wait_for(proc, r"serving MCP on (http://\S+/mcp)")
    return proc, found.group(1)


def _stop(proc: subprocess.Popen[str]) -> tuple[int, str]:
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=60)
    assert proc.stderr is not None
    return proc.returncode, proc.stderr.read()


async def test_a_client_over_http_and_sigterm_closes_the_sandbox(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "f.txt").write_text("over http\n")
    proc, url = _serve("--workspace", f"w={tmp_path / 'w'}")
    try:
        assert url.startswith("http://127.0.0.1:")
        async with Client(url) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "bash" in names and "read" in names
            read = await client.call_tool("read", {"path": "f.txt"})
            assert text(read) == "     1\tover http"
            where = await client.call_tool("bash", {"command": "pwd"})
            root = where.structured_content["stdout"].strip()
            bad = await client.call_tool("edit", {"path": "f.txt", "old": "x", "new": "y"})
            assert bad.is_error
        assert os.path.isdir(root)
    finally:
        code, err = _stop(proc)
    assert code == 128 + signal.SIGTERM, err
    assert not os.path.exists(root), err


async def test_a_token_is_required_when_one_is_set() -> None:
    proc, url = _serve(extra_env={"SANDLOT_TOKEN": TOKEN})
    try:
        async with httpx2.AsyncClient() as plain:
            refused = await plain.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert refused.status_code == 401
        assert refused.json()["error"] == "unauthorized"
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers) as authorized, Client(
            streamable_http_client(url, http_client=authorized)
        ) as client:
            assert len((await client.list_tools()).tools) == len(TOOLS) - 1  # not secret_env
    finally:
        code, err = _stop(proc)
    assert code == 128 + signal.SIGTERM, err
    assert TOKEN not in err


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({}, "binding 0.0.0.0 exposes the server beyond this machine"),
        ({"SANDLOT_TOKEN": "short"}, "SANDLOT_TOKEN is too short"),
    ],
)
def test_binding_beyond_loopback_needs_a_real_token(extra: dict[str, str], says: str) -> None:
    done = subprocess.run(command("--http", "--host", "0.0.0.0", "--port", "0"),
                          env=env(**extra), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode != 0
    assert says in done.stderr
    assert "creating" not in done.stderr  # refused before any sandbox was made
