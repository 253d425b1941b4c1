"""`sandlot mcp --http`: the MCP server as streamable HTTP under uvicorn, behind the same
Host/Origin guard and bearer-token check as `sandlot serve` (adr/0023, adr/0032)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import TransportSecuritySettings

from ..server.middleware import BearerAuth
from ..server.origin import HostOriginGuard
from ..server.settings import ServerSettings


def http_app(server: Server[Any], settings: ServerSettings) -> Any:
    """The ASGI app: the guard first (a foreign page is refused whatever it sends), then the
    token check when there is a token, then the SDK's streamable HTTP app."""
    # The SDK's own DNS-rebinding check is off: its list takes exact names with a port
    # wildcard, so it cannot say 127.0.0.0/8, it is off for any other bind address, and it
    # would refuse a host named with --allowed-host. HostOriginGuard checks the same headers.
    app: Any = server.streamable_http_app(
        host=settings.host,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    if settings.token is not None:
        app = BearerAuth(app, settings.token.get_secret_value())
    return HostOriginGuard(app, check_host=settings.token is None,
                           allowed_hosts=settings.allowed_hosts,
                           allowed_origins=settings.allowed_origins)


class _Web(uvicorn.Server):
    """Says where it listens (the OS may have chosen the port); signals stay with the
    command, which asks it to exit (`should_exit`)."""

    def __init__(self, config: uvicorn.Config, on_listening: Callable[[str], None]) -> None:
        super().__init__(config)
        self._on_listening = on_listening

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if self.started:
            host, port = self.servers[0].sockets[0].getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            self._on_listening(f"http://{shown}:{port}/mcp")


def web_server(server: Server[Any], settings: ServerSettings,
               on_listening: Callable[[str], None]) -> uvicorn.Server:
    """A uvicorn server for `server`; run it with `await web.serve()`."""
    config = uvicorn.Config(http_app(server, settings), host=settings.host, port=settings.port,
                            log_level="warning", lifespan="on", server_header=False)
    return _Web(config, on_listening)
