"""forward_port on every backend: an HTTP server started in the sandbox, fetched from the host
(50 requests at once, a 50 MiB download checked by its SHA-256), a refused port that does not
break the forward, and a forward that is gone once its block ends or its sandbox closes."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import ModuleType

import anyio
import httpx
import pytest

from sandlot import IsolatedSandboxProvider, Sandbox
from sandlot.forward import ForwardAddress
from sandlot.testing.ports import listen_port

pytestmark = pytest.mark.anyio

BIG = 50 << 20

# python3's http.server where there is python3, else busybox httpd (the busybox image).
SERVE = (
    'if command -v python3 >/dev/null 2>&1; then exec python3 -m http.server --bind 127.0.0.1 '
    '"$1"; else exec busybox httpd -f -p "127.0.0.1:$1" -h .; fi'
)


def _port() -> int:
    return listen_port()


@asynccontextmanager
async def _server(sandbox: Sandbox, root: str, port: int) -> AsyncIterator[None]:
    await sandbox.exec(["sh", "-c", 'printf hello > index.txt'], cwd=root, check=True)
    process = await sandbox.start(["sh", "-c", SERVE, "sh", str(port)], cwd=root)
    try:
        yield
    finally:
        await process.kill()


async def _get(address: ForwardAddress, path: str, client: httpx.AsyncClient) -> httpx.Response:
    return await client.get(f"{address.url}{path}", timeout=60)


async def _wait_up(address: ForwardAddress) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(200):
            try:
                if (await _get(address, "/index.txt", client)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await anyio.sleep(0.1)
    raise AssertionError("the server in the sandbox never answered through the forward")


async def _refused(address: ForwardAddress) -> None:
    with pytest.raises(OSError):
        stream = await anyio.connect_tcp(address.host, address.port)
        await stream.aclose()


async def test_an_http_server_in_the_sandbox_is_reached_from_the_host(
    sandbox: Sandbox, workdir: str, backend: ModuleType
) -> None:
    port = _port()
    await sandbox.exec(["sh", "-c", f"head -c {BIG} /dev/urandom > big.bin"], cwd=workdir,
                       check=True)
    digest = (await sandbox.exec(["sha256sum", "big.bin"], cwd=workdir)).stdout.split()[0]
    async with _server(sandbox, workdir, port), sandbox.forward_port(port) as address:
        assert address.host == "127.0.0.1" and address.port > 0
        assert (address.remote_host, address.remote_port) == ("127.0.0.1", port)
        await _wait_up(address)
        limits = httpx.Limits(max_connections=50)
        async with httpx.AsyncClient(limits=limits) as client:
            answers: list[httpx.Response] = []

            async def one() -> None:
                answers.append(await _get(address, "/index.txt", client))

            async with anyio.create_task_group() as group:
                for _ in range(50):
                    group.start_soon(one)
            assert [a.status_code for a in answers] == [200] * 50
            assert {a.text for a in answers} == {"hello"}
            big = await _get(address, "/big.bin", client)
        assert len(big.content) == BIG
        assert hashlib.sha256(big.content).hexdigest() == digest


async def test_a_refused_port_closes_that_connection_only(
    sandbox: Sandbox, workdir: str, backend: ModuleType
) -> None:
    port = _port()
    async with sandbox.forward_port(port) as address:
        # Nothing listens yet: the connection is accepted on the host, then closed.
        with anyio.fail_after(30):
            async with await anyio.connect_tcp(address.host, address.port) as conn:
                await conn.send(b"GET / HTTP/1.0\r\n\r\n")
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await conn.receive()
        async with _server(sandbox, workdir, port):
            await _wait_up(address)  # the same forward carries the next connections


async def test_a_forward_is_gone_after_its_block(
    sandbox: Sandbox, workdir: str, backend: ModuleType
) -> None:
    port = _port()
    async with _server(sandbox, workdir, port):
        async with sandbox.forward_port(port) as address:
            await _wait_up(address)
        await _refused(address)
        async with sandbox.forward_port(port) as one, sandbox.forward_port(port) as two:
            assert one.port != two.port  # several forwards at once
            await _wait_up(one)
            await _wait_up(two)


async def test_closing_the_sandbox_closes_its_forwards(
    provider: IsolatedSandboxProvider, backend: ModuleType
) -> None:
    port = _port()
    sandbox = await provider.create()
    try:
        async with _server(sandbox, sandbox.worktree, port), sandbox.forward_port(
            port
        ) as address:
            await _wait_up(address)
            await sandbox.close()
            await anyio.sleep(0.2)
            await _refused(address)
    finally:
        await sandbox.close()


def test_bad_ports_and_hosts_are_refused_before_listening() -> None:
    from sandlot.errors import ConfigurationError
    from sandlot.forward import check_target

    for args in ((0, 0, "127.0.0.1"), (70000, 0, "h"), (80, -1, "h"), (80, 0, "-oProxy"),
                 (80, 0, "a b"), (80, 0, "x\ny"), (True, 0, "h")):
        with pytest.raises(ConfigurationError):
            check_target(*args)  # type: ignore[arg-type]
    check_target(8080, 0, "localhost")
