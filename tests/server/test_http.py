"""The sandbox server over real HTTP on loopback: modes, errors, auth and limits."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest

from sandlot.server.runner import SandboxServer
from tests.server.conftest import http, serve, wait_for_path
from tests.toolchains import provider_for, toolchain_backends

pytestmark = pytest.mark.anyio

EXECUTE_KEYS = {"stdout", "stderr", "exit_code", "duration_ms", "timed_out", "truncated"}
HEALTH_KEYS = {"status", "mode", "runtime_version", "provider"}

PROGRAMS = {
    "python": ("import sys\nprint('py', sys.version_info[0])\nsys.exit(2)\n", "py 3\n"),
    "golang": (
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n)\n\n'
        'func main() {\n\tfmt.Println("go", 1+2)\n\tos.Exit(2)\n}\n',
        "go 3\n",
    ),
    "node": ("console.log('node', 1 + 2);\nprocess.exit(2);\n", "node 3\n"),
    "shell": ('echo "sh $((1 + 2))"\nexit 2\n', "sh 3\n"),
}
VERSIONS = {
    "python": r"^Python 3\.",
    "golang": r"^go version go1\.",
    "node": r"^v\d+\.",
    "shell": r"^GNU bash, version ",
}


@pytest.mark.parametrize("mode", list(PROGRAMS))
async def test_every_mode_same_contract(mode_servers: dict[str, SandboxServer], mode: str) -> None:
    async with http(mode_servers[mode]) as client:
        health = await client.get("/health")
        assert health.status_code == 200
        assert set(health.json()) == HEALTH_KEYS
        assert health.json()["mode"] == mode
        assert health.json()["provider"] == "local"
        assert re.match(VERSIONS[mode], health.json()["runtime_version"])
        code, expected = PROGRAMS[mode]
        response = await client.post("/execute", json={"code": code})
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == EXECUTE_KEYS
        assert (body["stdout"], body["exit_code"], body["timed_out"]) == (expected, 2, False)
        assert isinstance(body["duration_ms"], int) and body["duration_ms"] >= 0


@pytest.mark.parametrize("backend", toolchain_backends())
async def test_same_contract_on_every_backend(runtimes: None, backend: str) -> None:
    provider = provider_for(backend)  # skips (fails in CI) when the backend cannot run here
    with serve(provider, mode="shell") as server:
        async with http(server) as client:
            health = (await client.get("/health")).json()
            assert set(health) == HEALTH_KEYS
            assert (health["status"], health["mode"]) == ("ok", "shell")
            assert health["provider"] == provider.name
            code, expected = PROGRAMS["shell"]
            body = (await client.post("/execute", json={"code": code})).json()
            assert set(body) == EXECUTE_KEYS
            assert (body["stdout"], body["exit_code"]) == (expected, 2)


async def test_wrong_language_is_the_runtimes_error(
    mode_servers: dict[str, SandboxServer],
) -> None:
    async with http(mode_servers["node"]) as client:
        response = await client.post("/execute", json={"code": "print('hi')\ndef f(:\n"})
    body = response.json()
    assert response.status_code == 200
    assert body["exit_code"] != 0 and "SyntaxError" in body["stderr"]


async def test_requirements_over_http(mode_servers: dict[str, SandboxServer]) -> None:
    async with http(mode_servers["python"]) as client:
        ok = await client.post(
            "/execute", json={"code": "import six; print(six.PY3)", "requirements": ["six"]}
        )
        assert (ok.status_code, ok.json()["stdout"]) == (200, "True\n")
        bad = await client.post(
            "/execute",
            json={"code": "print(1)", "requirements": ["sandlot-no-such-package-zq"]},
        )
    assert bad.status_code == 422
    body = bad.json()
    assert body["error"] == "requirements_install_failed"
    assert body["installer"] == "uv"
    assert "sandlot-no-such-package-zq" in body["stderr"]


async def test_timeouts(mode_servers: dict[str, SandboxServer]) -> None:
    async with http(mode_servers["shell"]) as client:
        slow = await client.post("/execute", json={"code": "echo begun; sleep 60", "timeout": 1})
        assert slow.status_code == 200
        assert slow.json()["timed_out"] is True and slow.json()["stdout"] == "begun\n"
        too_long = await client.post("/execute", json={"code": "true", "timeout": 301})
        assert too_long.status_code == 422
        assert "maximum of 300s" in too_long.json()["detail"]
        for bad in (0, -1, "soon"):
            rejected = await client.post("/execute", json={"code": "true", "timeout": bad})
            assert rejected.status_code == 422, bad


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"code": 3},
        {"code": "x", "extra": 1},
        {"code": "x", "requirements": "six"},
        {"code": "x", "requirements": ["-r", "/etc/passwd"]},
        {"code": "x", "requirements": [""]},
        b'{"code": "\\ud800"}',  # a lone surrogate: valid JSON, not valid text
        b'{"code": "x", "timeout": NaN}',
    ],
)
async def test_invalid_requests_get_422(
    mode_servers: dict[str, SandboxServer], payload: object
) -> None:
    async with http(mode_servers["python"]) as client:
        if isinstance(payload, bytes):
            headers = {"content-type": "application/json"}
            response = await client.post("/execute", content=payload, headers=headers)
        else:
            response = await client.post("/execute", json=payload)
    assert response.status_code == 422, response.text
    assert response.json()["error"] == "invalid_request"
    assert response.json()["detail"]


async def test_not_json_gets_422(mode_servers: dict[str, SandboxServer]) -> None:
    async with http(mode_servers["python"]) as client:
        response = await client.post(
            "/execute", content=b"{not json", headers={"content-type": "application/json"}
        )
    assert response.status_code == 422


# ---- limits ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_server(runtimes: None) -> AsyncIterator[SandboxServer]:
    with serve(mode="shell", max_body_bytes=4096, max_code_chars=1000, max_concurrency=1) as s:
        yield s


async def test_body_over_the_limit_is_413(small_server: SandboxServer) -> None:
    async with http(small_server) as client:
        declared = await client.post("/execute", json={"code": "#" * 5000})
        assert declared.status_code == 413
        assert declared.json()["error"] == "too_large"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: chunked encoding
            yield b'{"code": "'
            for _ in range(10):
                yield b"#" * 1000
            yield b'"}'

        streamed = await client.post(
            "/execute", content=chunks(), headers={"content-type": "application/json"}
        )
        assert streamed.status_code == 413
        # A body under the limit holding code over the code limit.
        code = await client.post("/execute", json={"code": "#" * 1001})
        assert code.status_code == 422
        assert "at most 1000" in code.json()["detail"]
        fits = await client.post("/execute", json={"code": "echo fits #" + "#" * 900})
        assert fits.status_code == 200 and fits.json()["stdout"] == "fits\n"


async def test_concurrency_beyond_the_bound_is_429_at_once(
    small_server: SandboxServer,
) -> None:
    assert small_server.service is not None
    flag = Path(small_server.service.sandbox.worktree) / "busy-started"
    release = flag.with_name("busy-release")
    async with http(small_server) as client, anyio.create_task_group() as group:
        results: list[httpx.Response] = []

        async def occupy() -> None:
            results.append(
                await client.post(
                    "/execute",
                    json={
                        "code": f"touch {flag}; while [ ! -e {release} ]; do sleep 0.05; done; "
                        "echo done",
                        "timeout": 60,
                    },
                )
            )

        group.start_soon(occupy)
        await wait_for_path(flag)
        extra = await client.post("/execute", json={"code": "echo extra"})
        assert extra.status_code == 429
        assert extra.json()["error"] == "too_many_requests"
        assert extra.headers["retry-after"] == "1"
        # Health is not an execution: it still answers while the slot is taken.
        assert (await client.get("/health")).status_code == 200
        release.touch()
    assert results[0].json()["stdout"] == "done\n"
    after = await client_post(small_server, "echo again")
    assert after.json()["stdout"] == "again\n"


async def client_post(server: SandboxServer, code: str) -> httpx.Response:
    async with http(server) as client:
        return await client.post("/execute", json={"code": code})


async def test_shutting_down_is_503(runtimes: None) -> None:
    with serve(mode="shell") as server:
        assert server.service is not None
        server.service.closing = True
        async with http(server) as client:
            response = await client.post("/execute", json={"code": "echo x"})
            assert response.status_code == 503
            assert response.json()["error"] == "unavailable"
            health = await client.get("/health")
            assert health.status_code == 503 and health.json()["status"] == "unavailable"


# ---- auth --------------------------------------------------------------------------------

TOKEN = "test-token-0123456789abcdef"


@pytest.fixture(scope="module")
def token_server(runtimes: None) -> AsyncIterator[SandboxServer]:
    with serve(mode="shell", token=TOKEN) as server:
        yield server


@pytest.mark.parametrize(
    "header",
    [None, "Bearer wrong-token-0123456789abcdef", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN}x"],
)
async def test_wrong_or_missing_token_is_401(
    token_server: SandboxServer, header: str | None
) -> None:
    headers = {"Authorization": header} if header else {}
    async with http(token_server, headers=headers) as client:
        for response in (
            await client.post("/execute", json={"code": "echo never > ran"}),
            await client.get("/health"),
            await client.get("/openapi.json"),
        ):
            assert response.status_code == 401
            assert response.headers["www-authenticate"] == "Bearer"
            assert response.json()["error"] == "unauthorized"
            assert TOKEN not in response.text
    assert token_server.service is not None
    assert not (Path(token_server.service.sandbox.worktree) / "ran").exists()


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_right_token_is_accepted(token_server: SandboxServer, scheme: str) -> None:
    async with http(token_server, headers={"Authorization": f"{scheme} {TOKEN}"}) as client:
        response = await client.post("/execute", json={"code": "echo in"})
        assert (response.status_code, response.json()["stdout"]) == (200, "in\n")
        schema = (await client.get("/openapi.json")).json()
    assert schema["security"] == [{"bearer": []}]


async def test_unauthenticated_oversized_body_is_401_not_read(
    token_server: SandboxServer,
) -> None:
    async with http(token_server) as client:
        response = await client.post("/execute", json={"code": "#" * (2 << 20)})
    assert response.status_code == 401
