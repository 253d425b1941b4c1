"""Run the server: make the sandbox, fix the mode, serve with uvicorn, close the sandbox.

The sandbox's `on_close` is applied however the server ends: normal exit, SIGTERM or SIGINT
(also while the sandbox is still being created), or a failed start-up. Signals follow the one
policy of `sandlot._interrupts`: the first stops the server (running requests get their
grace), a second forces uvicorn down without waiting for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Callable, Iterator

import anyio
import uvicorn

from .._interrupts import Interrupts
from ..errors import register_secret
from ..provider import IsolatedSandboxProvider
from .app import create_app
from .protocol import with_header_timeout
from .service import SandboxService
from .settings import ServerSettings


class SandboxServer:
    """One server process's life. `run()` returns the exit status; `stop()` ends it (any thread)."""

    def __init__(self, settings: ServerSettings, provider: IsolatedSandboxProvider) -> None:
        settings.check_binding()
        if settings.token is not None:
            register_secret(settings.token.get_secret_value())
        self.settings = settings
        self.provider = provider
        self.url: str | None = None
        self.service: SandboxService | None = None
        self._uvicorn: uvicorn.Server | None = None
        self._startup: anyio.CancelScope | None = None
        self._stop_requested = False
        self._interrupts = Interrupts(lambda _signum: self.stop(), self._force_exit)
        self._loop: asyncio.AbstractEventLoop | None = None

    def stop(self) -> None:
        """Ask the server to shut down (thread-safe); the sandbox is then closed by `run()`."""
        self._stop_requested = True
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        else:
            self._cancel_startup()

    def _force_exit(self, _signum: int, _count: int) -> None:
        """A second signal: uvicorn stops without waiting for the running requests."""
        if self._uvicorn is not None:
            self._uvicorn.force_exit = True
        self.stop()

    def _cancel_startup(self) -> None:
        scope, loop = self._startup, self._loop
        if scope is not None and loop is not None:
            loop.call_soon_threadsafe(scope.cancel)

    async def run(self, on_ready: Callable[[SandboxServer], None] | None = None) -> int:
        """Serve until stopped. Raises start-up errors (e.g. `RuntimeNotFoundError`) after the
        sandbox was closed; returns 0, or 128+signal when a signal ended it during start-up."""
        self._loop = asyncio.get_running_loop()
        self._startup = anyio.CancelScope()
        if self._stop_requested:
            self._startup.cancel()
        with self._interrupts:
            sandbox = None
            try:
                with self._startup:
                    sandbox = await self.provider.create()
                    self.service = await SandboxService.start(sandbox, self.settings)
                if self.service is None:
                    return self._interrupts.exit_code or 128 + signal.SIGTERM
                await self._serve(self.service, on_ready)
                return 0
            finally:
                if self.service is not None:
                    self.service.closing = True
                if sandbox is not None:
                    with anyio.CancelScope(shield=True):
                        await sandbox.close()

    async def _serve(
        self, service: SandboxService, on_ready: Callable[[SandboxServer], None] | None
    ) -> None:
        config = uvicorn.Config(
            create_app(service),
            host=self.settings.host,
            port=self.settings.port,
            log_level=self.settings.log_level,
            # Not uvicorn's limit_concurrency: it counts idle connections too, so a few dozen
            # half-open sockets would turn every authorized request away (ActiveRequests).
            http=with_header_timeout(self.settings.header_timeout),
            # ShutdownDeadline answers 503 JSON at shutdown_grace; uvicorn's own cancellation
            # (a text/plain 500) is only the backstop a little later.
            timeout_graceful_shutdown=int(self.settings.shutdown_grace) + 5,
            lifespan="off",
            server_header=False,
        )
        server = _Server(config, lambda: self._ready(on_ready), service.stopping)
        self._uvicorn = server
        if self._stop_requested:  # stopped between the start-up and here
            server.should_exit = True
        # The forwards opened through POST /forwards live in this group until the server ends.
        async with anyio.create_task_group() as group:
            service.group = group
            try:
                await server.serve()
            finally:
                service.group = None
                group.cancel_scope.cancel()

    def _ready(self, on_ready: Callable[[SandboxServer], None] | None) -> None:
        assert self._uvicorn is not None
        sockname = self._uvicorn.servers[0].sockets[0].getsockname()
        host = f"[{sockname[0]}]" if ":" in sockname[0] else sockname[0]
        self.url = f"http://{host}:{sockname[1]}"
        if on_ready is not None:
            on_ready(self)


class _Server(uvicorn.Server):
    """uvicorn's server, telling when it listens (the port may have been chosen by the OS).
    Signals stay with the runner's Interrupts, which asks it to exit (`should_exit`)."""

    def __init__(
        self, config: uvicorn.Config, on_started: Callable[[], None], stopping: asyncio.Event
    ) -> None:
        super().__init__(config)
        self._on_started = on_started
        self._stopping = stopping

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._stopping.set()  # starts each running request's grace period
        await super().shutdown(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if self.started:
            self._on_started()
