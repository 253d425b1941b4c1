"""SandboxClient against the real server over loopback."""

from __future__ import annotations

import socket
from pathlib import Path

import anyio
import pytest

from sandlot import (
    ConfigurationError,
    InvalidTokenError,
    ServerAuthError,
    ServerInstallError,
    ServerRateLimitedError,
    ServerRejectedError,
    ServerTimeoutError,
    ServerUnreachableError,
)
from sandlot.server.client import SandboxClient
from sandlot.server.runner import SandboxServer
from tests.server.conftest import serve, wait_for_path

pytestmark = pytest.mark.anyio

TOKEN = "live-client-token-0123456789"


@pytest.fixture(scope="module")
def server(runtimes: None) -> SandboxServer:
    with serve(mode="python", token=TOKEN, max_concurrency=1, max_code_chars=2000) as running:
        yield running


async def test_execute_and_health(server: SandboxServer) -> None:
    assert server.url is not None
    async with SandboxClient(server.url, token=TOKEN) as client:
        report = await client.health()
        assert (report.status, report.mode, report.provider) == ("ok", "python", "local")
        result = await client.execute("import six\nprint(six.__name__)", requirements=["six"])
        assert (result.stdout, result.exit_code) == ("six\n", 0)
        failed = await client.execute("raise SystemExit(9)")
        assert failed.exit_code == 9
        slow = await client.execute("import time\ntime.sleep(30)", timeout=1)
        assert slow.timed_out


async def test_typed_errors_from_the_real_server(server: SandboxServer) -> None:
    assert server.url is not None
    async with SandboxClient(server.url, token="wrong-token-0123456789abc") as client:
        with pytest.raises(ServerAuthError):
            await client.health()
    async with SandboxClient(server.url, token=TOKEN) as client:
        with pytest.raises(ServerRejectedError, match="at most 2000") as too_large:
            await client.execute("#" * 3000)
        assert too_large.value.status == 422
        with pytest.raises(ServerRejectedError, match="maximum of 300s"):
            await client.execute("pass", timeout=500)
        with pytest.raises(ServerInstallError) as install:
            await client.execute("pass", requirements=["sandlot-no-such-package-zq"])
        assert "sandlot-no-such-package-zq" in install.value.stderr


async def test_busy_server_and_client_timeout(server: SandboxServer) -> None:
    assert server.url is not None and server.service is not None
    flag = Path(server.service.sandbox.worktree) / "client-busy"
    code = f"open({str(flag)!r}, 'w').close()\nimport time\ntime.sleep(3)"
    async with SandboxClient(server.url, token=TOKEN, timeout=1) as client:
        async with anyio.create_task_group() as group:

            async def hold() -> None:
                # The client gives up after 1 s; the run goes on for its 3 s.
                with pytest.raises(ServerTimeoutError, match="no answer within"):
                    await client.execute(code)

            group.start_soon(hold)
            await wait_for_path(flag)
            with pytest.raises(ServerRateLimitedError) as busy:
                await client.execute("pass")
            assert busy.value.retry_after == 1.0
        # The slot frees itself when the abandoned run ends.
        with anyio.fail_after(60):
            while True:
                try:
                    await client.execute("pass")
                    break
                except ServerRateLimitedError:
                    await anyio.sleep(0.2)


async def test_connection_refused() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # Nothing listens on the port now.
    async with SandboxClient(f"http://127.0.0.1:{port}") as client:
        with pytest.raises(ServerUnreachableError, match="cannot reach the server"):
            await client.health()


def fragments(secret: str, size: int = 12) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


BAD_TOKENS = [TOKEN + "\n", TOKEN + " ", " " + TOKEN, TOKEN[:9] + "\t" + TOKEN[9:],
              TOKEN + "\u00e9", TOKEN + "\x00"]  # fmt: skip


@pytest.mark.parametrize("bad", BAD_TOKENS)
async def test_a_token_no_header_can_carry_is_refused_without_showing_it(bad: str) -> None:
    with pytest.raises(InvalidTokenError, match="server token") as caught:
        SandboxClient("http://127.0.0.1:9", token=bad)
    shown = f"{caught.value}{caught.value!r}"
    assert not [piece for piece in fragments(TOKEN) if piece in shown]


async def test_a_bad_url_is_a_typed_error_that_names_no_token() -> None:
    with pytest.raises(ConfigurationError, match="not a valid server URL") as caught:
        SandboxClient("http://127.0.0.1:notaport", token=TOKEN)
    shown = f"{caught.value}{caught.value!r}"
    assert not [piece for piece in fragments(TOKEN) if piece in shown]
