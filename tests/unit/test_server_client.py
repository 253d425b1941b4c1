"""SandboxClient against respx-mocked answers: every status maps to its typed error."""

from __future__ import annotations

import json

import httpx
import pytest
import respx

from sandlot import (
    ServerAuthError,
    ServerBusyError,
    ServerInstallError,
    ServerRateLimitedError,
    ServerRejectedError,
    ServerRequestError,
    ServerTimeoutError,
    ServerUnavailableError,
    ServerUnreachableError,
)
from sandlot.server.client import ANSWER_MARGIN, SandboxClient

pytestmark = pytest.mark.anyio

BASE = "http://sandbox.test:8080"
TOKEN = "client-secret-token-0123456789"
OK = {
    "stdout": "hi\n",
    "stderr": "",
    "exit_code": 0,
    "duration_ms": 12,
    "timed_out": False,
    "truncated": False,
}


@pytest.fixture
def mock() -> respx.MockRouter:
    with respx.mock(base_url=BASE, assert_all_called=False) as router:
        yield router


async def test_execute_sends_the_request_and_parses_the_result(mock: respx.MockRouter) -> None:
    route = mock.post("/execute").respond(200, json=OK)
    async with SandboxClient(BASE + "/", token=TOKEN) as client:
        result = await client.execute("print('hi')", requirements=["six"], timeout=5)
    assert result.stdout == "hi\n" and result.exit_code == 0 and result.duration_ms == 12
    sent = route.calls.last.request
    assert json.loads(sent.content) == {
        "code": "print('hi')", "requirements": ["six"], "timeout": 5,
    }
    assert sent.headers["authorization"] == f"Bearer {TOKEN}"
    # The HTTP wait covers the run's own timeout plus a margin.
    assert sent.extensions["timeout"]["read"] == max(60.0, 5 + ANSWER_MARGIN)


async def test_timeout_is_omitted_when_not_given(mock: respx.MockRouter) -> None:
    route = mock.post("/execute").respond(200, json=OK)
    async with SandboxClient(BASE) as client:
        await client.execute("x")
    assert json.loads(route.calls.last.request.content) == {"code": "x", "requirements": []}
    assert "authorization" not in route.calls.last.request.headers


async def test_health(mock: respx.MockRouter) -> None:
    body = {
        "status": "ok", "mode": "golang", "runtime_version": "go version go1.22",
        "provider": "docker",
    }
    mock.get("/health").respond(200, json=body)
    async with SandboxClient(BASE) as client:
        report = await client.health()
    assert (report.mode, report.provider) == ("golang", "docker")


@pytest.mark.parametrize(
    ("status", "body", "headers", "error_type"),
    [
        (401, {"error": "unauthorized", "detail": "missing token"}, {}, ServerAuthError),
        (429, {"error": "too_many_requests", "detail": "busy"}, {"Retry-After": "3"},
         ServerRateLimitedError),
        (503, {"error": "unavailable", "detail": "shutting down"}, {"Retry-After": "1"},
         ServerUnavailableError),
        (413, {"error": "too_large", "detail": "too big"}, {}, ServerRejectedError),
        (422, {"error": "invalid_request", "detail": "timeout: bad"}, {}, ServerRejectedError),
        (504, {"error": "sandbox_unresponsive", "detail": "stuck"}, {}, ServerTimeoutError),
        (500, None, {}, ServerRequestError),
    ],
)  # fmt: skip
async def test_status_codes_become_typed_errors(
    mock: respx.MockRouter,
    status: int,
    body: dict[str, str] | None,
    headers: dict[str, str],
    error_type: type[ServerRequestError],
) -> None:
    if body is None:
        mock.post("/execute").respond(status, text="Internal Server Error", headers=headers)
    else:
        mock.post("/execute").respond(status, json=body, headers=headers)
    async with SandboxClient(BASE, token=TOKEN) as client:
        with pytest.raises(error_type) as caught:
            await client.execute("x")
    error = caught.value
    assert type(error) is error_type
    assert error.status == status
    assert f"HTTP {status}" in str(error)
    assert error.url == f"{BASE}/execute"
    if body is not None:
        assert error.error == body["error"] and body["detail"] in str(error)
    if isinstance(error, ServerBusyError):
        assert error.retry_after == float(headers["Retry-After"])
    assert TOKEN not in str(error) and TOKEN not in repr(client)


async def test_install_failure_carries_the_installer_output(mock: respx.MockRouter) -> None:
    mock.post("/execute").respond(
        422,
        json={
            "error": "requirements_install_failed",
            "detail": "installing requirements for mode=python failed",
            "installer": "uv",
            "exit_code": 1,
            "stderr": "No solution found",
        },
    )
    async with SandboxClient(BASE) as client:
        with pytest.raises(ServerInstallError) as caught:
            await client.execute("x", requirements=["nope"])
    assert (caught.value.installer, caught.value.exit_code) == ("uv", 1)
    assert caught.value.stderr == "No solution found"
    assert isinstance(caught.value, ServerRejectedError)


@pytest.mark.parametrize(
    ("exc", "error_type"),
    [
        (httpx.ReadTimeout("read timed out"), ServerTimeoutError),
        (httpx.ConnectTimeout("connect timed out"), ServerTimeoutError),
        (httpx.ConnectError("[Errno 111] Connection refused"), ServerUnreachableError),
        (httpx.RemoteProtocolError("peer closed connection"), ServerUnreachableError),
    ],
)
async def test_transport_failures_become_typed_errors(
    mock: respx.MockRouter, exc: Exception, error_type: type[ServerRequestError]
) -> None:
    mock.get("/health").mock(side_effect=exc)
    async with SandboxClient(BASE, timeout=2) as client:
        with pytest.raises(error_type) as caught:
            await client.health()
    assert caught.value.status is None
    assert f"{BASE}/health" in str(caught.value)


async def test_an_answer_that_is_not_the_contract_is_an_error(mock: respx.MockRouter) -> None:
    mock.post("/execute").respond(200, json={"stdout": "only"})
    async with SandboxClient(BASE) as client:
        with pytest.raises(ServerRequestError, match="not a sandlot ExecuteResponse"):
            await client.execute("x")
