"""Servers for the HTTP tests: the real app under uvicorn on a free loopback port.

`serve(...)` runs a whole `SandboxServer` (sandbox creation, mode check, uvicorn, close) in a
thread with its own event loop, the way `sandlot serve` runs it in a process; the tests talk
to it over real HTTP. The SIGTERM tests start `sandlot serve` as a real subprocess instead.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from sandlot import IsolatedSandboxProvider
from sandlot.server.runner import SandboxServer
from sandlot.server.settings import ServerSettings
from tests.backends.local import toolchain_provider
from tests.helpers import require_binary

START_TIMEOUT = 120.0


@contextmanager
def serve(
    provider: IsolatedSandboxProvider | None = None, **settings: Any
) -> Iterator[SandboxServer]:
    """A running server on 127.0.0.1 and a free port; stopped (sandbox closed) on exit."""
    settings.setdefault("port", 0)
    settings.setdefault("log_level", "warning")
    server = SandboxServer(ServerSettings(**settings), provider or toolchain_provider())
    ready = threading.Event()
    failure: list[BaseException] = []

    def main() -> None:
        try:
            asyncio.run(server.run(on_ready=lambda _s: ready.set()))
        except BaseException as exc:  # reported to the test below
            failure.append(exc)
        finally:
            ready.set()

    thread = threading.Thread(target=main, name="sandlot-test-server", daemon=True)
    thread.start()
    ready.wait(START_TIMEOUT)
    if failure:
        raise failure[0]
    assert server.url is not None, "server did not start in time"
    try:
        yield server
    finally:
        server.stop()
        thread.join(60)
        assert not thread.is_alive(), "server thread did not stop"
        if failure:
            raise failure[0]


@pytest.fixture(scope="module")
def runtimes() -> None:
    for binary in ("python3", "go", "node", "npm", "bash"):
        require_binary(binary, "the polyglot machine image provides it")


@pytest.fixture(scope="module")
def mode_servers(runtimes: None) -> Iterator[dict[str, SandboxServer]]:
    """One server per mode, for the module's tests to share."""
    from contextlib import ExitStack

    with ExitStack() as stack:
        yield {
            mode: stack.enter_context(serve(mode=mode, max_concurrency=2))
            for mode in ("python", "golang", "node", "shell")
        }


@asynccontextmanager
async def http(server: SandboxServer, **kwargs: Any) -> AsyncIterator[httpx.AsyncClient]:
    assert server.url is not None
    async with httpx.AsyncClient(base_url=server.url, timeout=120, **kwargs) as client:
        yield client


async def wait_for_path(path: Path, timeout: float = 30.0) -> None:
    """Until a file a run in the sandbox makes appears (the run has really started)."""
    with anyio.fail_after(timeout):
        for _ in itertools.count():
            if path.exists():
                return
            await anyio.sleep(0.05)
