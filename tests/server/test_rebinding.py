"""DNS rebinding and foreign pages: a loopback server without a token answers only requests
addressed to a loopback name, and from no page but this machine's (issue 35.3, adr/0032)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from sandlot.server.runner import SandboxServer
from tests.server.conftest import serve

pytestmark = pytest.mark.anyio

TOKEN = "rebinding-token-0123456789abcdef"


@pytest.fixture(scope="module", params=["127.0.0.1", "127.0.0.2"])
def server(runtimes: None, request: pytest.FixtureRequest) -> Iterator[SandboxServer]:
    # 127.0.0.2 is loopback too (no token needed), and must get the same checks.
    with serve(mode="shell", host=request.param) as running:
        yield running


@pytest.fixture(scope="module")
def token_server(runtimes: None) -> Iterator[SandboxServer]:
    with serve(mode="shell", token=TOKEN, allowed_origins=["https://agent.example.com"]) as s:
        yield s


def _port(server: SandboxServer) -> int:
    assert server.url is not None
    port = urlsplit(server.url).port
    assert port is not None
    return port


def _marker(server: SandboxServer, name: str) -> Path:
    assert server.service is not None
    return Path(server.service.sandbox.worktree) / name


async def _post(server: SandboxServer, path: str, body: object,
                headers: dict[str, str]) -> httpx.Response:
    async with httpx.AsyncClient(base_url=server.url or "", timeout=60) as client:
        return await client.post(path, json=body, headers=headers)


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}",
                                  "localhost.attacker.example:{port}", "127.0.0.1.nip.io:{port}",
                                  "localhost:1", ""])
async def test_a_foreign_host_is_refused_and_nothing_runs(server: SandboxServer,
                                                          host: str) -> None:
    marker = _marker(server, "host-ran")
    headers = {"Host": host.format(port=_port(server))}
    for path, body in (("/execute", {"code": f"touch {marker}"}),
                       ("/processes", {"command": f"touch {marker}"})):
        answer = await _post(server, path, body, headers)
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"] == "forbidden_host"
    async with httpx.AsyncClient(base_url=server.url or "", timeout=60) as client:
        assert (await client.get("/health", headers=headers)).status_code == 403
    assert not marker.exists()


@pytest.mark.parametrize("origin", ["http://attacker.example", "https://attacker.example:443",
                                    "null", "http://localhost.attacker.example",
                                    "file://", "chrome-extension://abc"])
async def test_a_foreign_origin_is_refused_and_nothing_runs(server: SandboxServer,
                                                            origin: str) -> None:
    marker = _marker(server, "origin-ran")
    for path, body in (("/execute", {"code": f"touch {marker}"}),
                       ("/processes", {"command": f"touch {marker}"})):
        answer = await _post(server, path, body, {"Origin": origin})
        assert answer.status_code == 403, answer.text
        assert answer.json()["error"] == "forbidden_origin"
    assert not marker.exists()


async def test_loopback_names_and_pages_are_answered(server: SandboxServer) -> None:
    port = _port(server)
    bound = urlsplit(server.url or "").hostname
    for i, (host, origin) in enumerate([
        (None, None),
        (f"{bound}:{port}", None),
        (f"localhost:{port}", "http://localhost:5173"),
        (f"LOCALHOST:{port}", "https://127.0.0.1"),
        (f"[::1]:{port}", "http://[::1]:8000"),
    ]):
        headers = {k: v for k, v in (("Host", host), ("Origin", origin)) if v is not None}
        marker = _marker(server, f"ok-{i}")
        answer = await _post(server, "/execute", {"code": f"touch {marker}"}, headers)
        assert answer.status_code == 200, (headers, answer.text)
        assert marker.exists()


async def test_with_a_token_any_host_is_answered_but_origins_are_still_checked(
    token_server: SandboxServer,
) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    marker = _marker(token_server, "proxied")
    answer = await _post(token_server, "/execute", {"code": f"touch {marker}"},
                         {**auth, "Host": "sandbox.internal.example"})
    assert answer.status_code == 200, answer.text
    assert marker.exists()
    foreign = _marker(token_server, "foreign")
    answer = await _post(token_server, "/execute", {"code": f"touch {foreign}"},
                         {**auth, "Origin": "https://attacker.example"})
    assert (answer.status_code, answer.json()["error"]) == (403, "forbidden_origin")
    assert not foreign.exists()
    named = _marker(token_server, "named")
    answer = await _post(token_server, "/execute", {"code": f"touch {named}"},
                         {**auth, "Origin": "https://agent.example.com"})
    assert answer.status_code == 200, answer.text
    assert named.exists()
    # Unauthenticated is still 401 for a proper Host, whatever the Origin rule.
    assert (await _post(token_server, "/execute", {"code": "true"}, {})).status_code == 401


def test_an_allowed_host_is_answered(runtimes: None, tmp_path: Path) -> None:
    with serve(mode="shell", allowed_hosts=["sandbox.proxy.example"]) as server:
        marker = _marker(server, "via-proxy")
        answer = httpx.post(f"{server.url}/execute", json={"code": f"touch {marker}"},
                            headers={"Host": "sandbox.proxy.example:8443"}, timeout=60)
        assert answer.status_code == 200, answer.text
        assert marker.exists()
        other = httpx.post(f"{server.url}/execute", json={"code": "true"},
                           headers={"Host": "other.proxy.example"}, timeout=60)
        assert other.status_code == 403
