"""Port forwarding against a direct connection, in one run.

A 200 MiB download and a small request's latency through `forward_port` against the same
request to an HTTP server on the host directly. Local and fake Coder sandboxes run their
commands on this host, so their forward reaches the very server the baseline uses (the ratio is
the forward's cost alone); the Docker container (no network) serves the same file with the same
program (python3 -m http.server) inside it, forwarded over the session helper and without it.
Goals (issue 28): Docker over the helper, small request <= 2x direct, 200 MiB <= 2x.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import httpx

import sandlot
from sandlot.testing import AgentSpec, FakeCoderDeployment
from sandlot.testing.ports import listen_port

from .core import Measurement, Unavailable, interleaved
from .measures import Scratch


@contextlib.asynccontextmanager
async def _host_server(root: Path) -> AsyncIterator[int]:
    port = listen_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "http.server", "--bind", "127.0.0.1", str(port),
        cwd=root, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await _wait(f"http://127.0.0.1:{port}/small.txt")
        yield port
    finally:
        proc.kill()
        await proc.wait()


async def _wait(url: str) -> None:
    async with httpx.AsyncClient() as client:
        for _ in range(300):
            with contextlib.suppress(httpx.TransportError):
                if (await client.get(url)).status_code == 200:
                    return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} never answered")


def _fetcher(client: httpx.AsyncClient, url: str, size: int) -> Callable[[], Awaitable[None]]:
    async def fetch() -> None:
        got = 0
        async with client.stream("GET", url) as answer:
            async for chunk in answer.aiter_bytes(1 << 20):
                got += len(chunk)
        assert got == size, (got, size)

    return fetch


async def _pair(backend: str, direct: str, forwarded: str, size: int, rounds: int
                ) -> list[Measurement]:
    target = "<= 2x" if backend == "docker (helper)" else ""
    async with httpx.AsyncClient(timeout=300) as client:
        s, b = await interleaved(_fetcher(client, f"{forwarded}/big.bin", size),
                                 _fetcher(client, f"{direct}/big.bin", size),
                                 rounds=rounds, warmup=1)
        mib = size / (1 << 20)
        big = Measurement("forward", backend, f"{mib:.0f} MiB through forward_port",
                          "same download, direct", s, b, "s", target=target,
                          notes=f"{mib / s:.0f} MiB/s vs {mib / b:.0f} MiB/s direct")
        s2, b2 = await interleaved(_fetcher(client, f"{forwarded}/small.txt", 5),
                                   _fetcher(client, f"{direct}/small.txt", 5),
                                   rounds=rounds * 10, warmup=3)
        small = Measurement("forward", backend, "small request through forward_port",
                            "same request, direct", s2, b2, "s", target=target)
    return [big, small]


async def run(quick: bool = False) -> list[Measurement]:
    size = (20 if quick else 200) << 20
    rounds = 3 if quick else 5
    rows: list[Measurement] = []
    with Scratch() as scratch:
        site = scratch / "site"
        site.mkdir()
        (site / "small.txt").write_text("small")
        await asyncio.to_thread((site / "big.bin").write_bytes, random.randbytes(size))
        async with _host_server(site) as port:
            direct = f"http://127.0.0.1:{port}"
            async with sandlot.local().session() as box, box.forward_port(port) as address:
                rows += await _pair("local", direct, address.url, size, rounds)
            fake = FakeCoderDeployment(scratch / "coder")
            try:
                fake.add_template("fwd", agents=[AgentSpec("main")])
                exe = fake.install(scratch / "bin")
                provider = sandlot.coder(template="fwd", on_close="delete",
                                         coder_binary=str(exe), coder_url=fake.url,
                                         session_token=fake.token)
                async with provider.session() as box, box.forward_port(port) as address:
                    rows += await _pair("coder (fake)", direct, address.url, size, rounds)
            finally:
                fake.shutdown()
            rows += await _docker(site, direct, size, rounds)
    return rows


async def _docker(site: Path, direct: str, size: int, rounds: int) -> list[Measurement]:
    """The same server program as the direct baseline (python3 -m http.server), in a container
    with python3, forwarded over the session helper and over today's `docker exec` relay."""
    from tests import docker_engine

    from .docker_bench import python_provider

    if docker_engine.missing_components():
        raise Unavailable("docker engine parts missing")
    engine = docker_engine.DockerEngine().start()
    rows: list[Measurement] = []
    try:
        for helper in (True, False):
            try:
                provider = python_provider(engine, helper=helper)
            except Unavailable:
                continue
            label = "docker (helper)" if helper else "docker (no helper)"
            async with provider.session() as box:
                await box.copy_in(site, "/srv")
                port = 8080
                server = await box.start(["python3", "-m", "http.server", "--bind", "127.0.0.1",
                                          str(port), "-d", "/srv"])
                try:
                    async with box.forward_port(port) as address:
                        started = time.monotonic()
                        await _wait(f"{address.url}/small.txt")
                        assert time.monotonic() - started < 60
                        rows += await _pair(label, direct, address.url, size, rounds)
                finally:
                    await server.kill()
    finally:
        engine.stop()
    return rows
