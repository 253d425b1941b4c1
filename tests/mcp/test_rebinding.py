"""`sandlot mcp --http` on loopback without a token answers no foreign Host and no foreign
Origin, on every loopback address (issue 35.3, adr/0032)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.mcp.support import start, wait_for

TOKEN = "t0ken-for-the-rebinding-tests-0123456789"
ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "rebinding-test", "version": "1"}}}


class Running:
    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc = proc
        self.url = url
        parts = urlsplit(url)
        self.netloc = parts.netloc


@pytest.fixture(scope="module", params=["127.0.0.1", "127.0.0.2"])
def mcp_http(request: pytest.FixtureRequest) -> Iterator[Running]:
    proc = start("--http", "--host", request.param, "--port", "0")
    try:
        found = wait_for(proc, r"serving MCP on (http://\S+/mcp)")
        yield Running(proc, found.group(1))
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def _post(url: str, body: object, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(url, json=body, headers={**ACCEPT, **headers}, timeout=60)


def _session(server: Running) -> dict[str, str]:
    """A session opened the proper way (loopback Host, no Origin)."""
    opened = _post(server.url, INIT, {})
    assert opened.status_code == 200, opened.text
    session = {"Mcp-Session-Id": opened.headers["mcp-session-id"],
               "Mcp-Protocol-Version": "2025-06-18"}
    done = _post(server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert done.status_code == 202, done.text
    return session


def _bash(command: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "bash", "arguments": {"command": command}}}


@pytest.mark.parametrize("foreign", [{"Host": "attacker.example"},
                                     {"Host": "attacker.example:{port}"},
                                     {"Origin": "http://attacker.example"},
                                     {"Origin": "null"}])
def test_a_foreign_host_or_origin_is_refused(mcp_http: Running, foreign: dict[str, str],
                                            tmp_path: Path) -> None:
    port = str(urlsplit(mcp_http.url).port)
    foreign = {k: v.replace("{port}", port) for k, v in foreign.items()}
    refused = _post(mcp_http.url, INIT, foreign)
    assert refused.status_code == 403, refused.text
    assert refused.json()["error"] in ("forbidden_host", "forbidden_origin")
    session = _session(mcp_http)
    listed = _post(mcp_http.url, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                   {**session, **foreign})
    assert listed.status_code == 403, listed.text
    marker = tmp_path / "ran"
    called = _post(mcp_http.url, _bash(f"touch {marker}"), {**session, **foreign})
    assert called.status_code == 403, called.text
    assert not marker.exists()
    # The same call, addressed properly, runs: the refusal was the headers'.
    called = _post(mcp_http.url, _bash(f"touch {marker}"),
                   {**session, "Origin": "http://localhost:6274"})
    assert called.status_code == 200, called.text
    assert marker.exists()


def test_loopback_names_are_answered(mcp_http: Running) -> None:
    port = urlsplit(mcp_http.url).port
    for host in (mcp_http.netloc, f"localhost:{port}", f"[::1]:{port}"):
        opened = _post(mcp_http.url, INIT, {"Host": host, "Origin": f"http://{host}"})
        assert opened.status_code == 200, (host, opened.text)


def test_with_a_token_the_host_is_free_and_the_origin_checked() -> None:
    proc = start("--http", "--port", "0", extra_env={"SANDLOT_TOKEN": TOKEN})
    try:
        url = wait_for(proc, r"serving MCP on (http://\S+/mcp)").group(1)
        auth = {"Authorization": f"Bearer {TOKEN}"}
        proxied = _post(url, INIT, {**auth, "Host": "mcp.internal.example"})
        assert proxied.status_code == 200, proxied.text
        foreign = _post(url, INIT, {**auth, "Origin": "https://attacker.example"})
        assert (foreign.status_code, foreign.json()["error"]) == (403, "forbidden_origin")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
