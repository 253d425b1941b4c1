"""Numbers in request bodies are JSON numbers: `true` is not port 1 nor a 1 s timeout, "5" is
not 5 (issue 35.10). Refused with 422 before anything opens or runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from sandlot.server.runner import SandboxServer
from tests.server.conftest import serve


@pytest.fixture(scope="module")
def server(runtimes: None) -> Iterator[SandboxServer]:
    with serve(mode="shell") as running:
        yield running


def _post(server: SandboxServer, path: str, body: object) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=60)


@pytest.mark.parametrize("port", [True, False, 1.0, "8080", 0, 65536, -1, None, [80]])
def test_a_forward_port_that_is_not_an_integer_in_range_is_422(server: SandboxServer,
                                                               port: object) -> None:
    answer = _post(server, "/forwards", {"port": port})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == "invalid_request"
    assert httpx.get(f"{server.url}/forwards", timeout=60).json() == []


@pytest.mark.parametrize("timeout", [True, False, "5", "inf", [5]])
@pytest.mark.parametrize("field", ["timeout", "idle_timeout"])
def test_a_process_time_limit_that_is_not_a_number_is_422(server: SandboxServer, field: str,
                                                          timeout: object) -> None:
    assert server.service is not None
    marker = Path(server.service.sandbox.worktree) / "started"
    answer = _post(server, "/processes", {"command": f"touch {marker}", field: timeout})
    assert answer.status_code == 422, answer.text
    assert field in answer.json()["detail"]
    assert httpx.get(f"{server.url}/processes", timeout=60).json() == []
    assert not marker.exists()


@pytest.mark.parametrize("timeout", [True, False, "5", [5]])
def test_an_execute_timeout_that_is_not_a_number_is_422(server: SandboxServer,
                                                        timeout: object) -> None:
    assert server.service is not None
    marker = Path(server.service.sandbox.worktree) / "ran"
    answer = _post(server, "/execute", {"code": f"touch {marker}", "timeout": timeout})
    assert answer.status_code == 422, answer.text
    assert "timeout" in answer.json()["detail"]
    assert not marker.exists()


def test_numbers_still_pass(server: SandboxServer) -> None:
    ran = _post(server, "/execute", {"code": "echo ok", "timeout": 5})
    assert (ran.status_code, ran.json()["stdout"]) == (200, "ok\n")
    ran = _post(server, "/execute", {"code": "echo ok", "timeout": 2.5})
    assert ran.status_code == 200, ran.text
