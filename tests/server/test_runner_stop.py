"""`SandboxServer.stop()` is never lost, whenever it lands in the server's life."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from sandlot.server.runner import SandboxServer
from sandlot.server.service import SandboxService
from sandlot.server.settings import ServerSettings
from tests.backends.local import toolchain_provider
from tests.helpers import require_binary


def test_a_stop_between_start_up_and_uvicorn_ends_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The start-up's scope has closed and uvicorn does not exist yet: the old server lost the
    stop there and served on until killed."""
    require_binary("bash")
    server = SandboxServer(ServerSettings(port=0, log_level="warning", mode="shell"),
                           toolchain_provider())
    start = SandboxService.start

    async def start_then_stop(*args: Any, **kwargs: Any) -> SandboxService:
        service = await start(*args, **kwargs)
        server.stop()  # as a signal or another thread would, just before uvicorn is made
        return service

    monkeypatch.setattr(SandboxService, "start", start_then_stop)
    outcome: list[object] = []

    def main() -> None:
        try:
            outcome.append(asyncio.run(server.run()))
        except BaseException as exc:  # reported below
            outcome.append(exc)

    thread = threading.Thread(target=main, daemon=True)
    thread.start()
    thread.join(120)  # a bound for "did not hang": the old server never returned
    assert not thread.is_alive(), "the server kept serving after stop()"
    assert outcome == [0]
    assert server.service is not None and server.service.closing
