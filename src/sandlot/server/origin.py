"""Host and Origin checks against DNS rebinding, shared by `sandlot serve` and `sandlot mcp
--http` (adr/0032).

A web page can make the browser send requests to a loopback server under the page's own
name (DNS rebinding): the request then carries `Host: attacker.example`. A page can also post
to a loopback address directly: the request then carries the page's `Origin`. A server
without a token trusts everything that reaches it, so it must refuse both. A server with a
token is safe from both (a browser never adds the bearer token on its own), but the MCP
specification requires every server to validate `Origin`, so that check stays.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from .middleware import send_error


def is_loopback_name(host: str) -> bool:
    """`localhost` or a loopback address literal (127.0.0.0/8, ::1; IPv6 in brackets or not).

    Any loopback literal is safe to accept: rebinding needs a DNS name, and a page whose own
    address is a loopback literal is already on this machine."""
    host = host.lower().rstrip(".")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.removeprefix("[").removesuffix("]")).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6][:port]` -> (name, port); None when it is not a host header."""
    value = value.strip()
    if not value or any(c in value for c in "/@?# \t\\"):
        return None
    if value.startswith("["):
        close = value.find("]")
        if close < 0:
            return None
        name, rest = value[: close + 1], value[close + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port_text = rest[1:] if rest else None
    else:
        name, sep, port_text_or_empty = value.rpartition(":")
        if not sep:
            name, port_text = value, None
        else:
            if ":" in name:  # a bare IPv6 address is not a Host header
                return None
            port_text = port_text_or_empty
    if port_text is None:
        return name.lower(), None
    if not port_text.isdigit() or not 0 < int(port_text) < 65536:
        return None
    return name.lower(), int(port_text)


def _origin_host(origin: str) -> str | None:
    """An http(s) origin's host name; None for anything else (`null`, other schemes)."""
    try:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.path or parts.query:
            return None
        return parts.hostname  # brackets stripped for IPv6
    except ValueError:
        return None


class HostOriginGuard:
    """Refuse, with 403 JSON, requests whose `Host` or `Origin` names a foreign site.

    - `Host` (checked only when `check_host`, i.e. the server has no token): a loopback name
      with this server's own port, or one of `allowed_hosts` (`name` for any port, or
      `name:port`).
    - `Origin`: absent, or an http(s) origin on a loopback name (any port), or one of
      `allowed_origins` (exact, e.g. `https://agent.example.com`).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        check_host: bool,
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self.check_host = check_host
        self.allowed_hosts = {h.strip().lower() for h in allowed_hosts}
        self.allowed_origins = {o.strip().lower().rstrip("/") for o in allowed_origins}

    def _host_ok(self, value: str, own_port: int | None) -> bool:
        parsed = split_host(value)
        if parsed is None:
            return False
        name, port = parsed
        if value.strip().lower() in self.allowed_hosts or name in self.allowed_hosts:
            return True
        if not is_loopback_name(name):
            return False
        # Without a port the client means 80; the name alone does not prove it is us.
        return own_port is None or (port or 80) == own_port

    def _origin_ok(self, value: str) -> bool:
        if value.strip().lower().rstrip("/") in self.allowed_origins:
            return True
        host = _origin_host(value.strip())
        return host is not None and is_loopback_name(host)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        host: str | None = None
        origins: list[str] = []
        for name, raw in scope["headers"]:
            if name == b"host" and host is None:
                host = raw.decode("latin-1")
            elif name == b"origin":
                origins.append(raw.decode("latin-1"))
        server = scope.get("server")
        own_port = server[1] if server and server[1] is not None else None
        if self.check_host and not (host is not None and self._host_ok(host, own_port)):
            await send_error(
                send, 403, "forbidden_host",
                f"Host {host and host[:100]!r} is not this server's: a loopback server "
                "without a token answers only requests addressed to 127.0.0.1, localhost or "
                "[::1] (this refuses DNS rebinding); behind a proxy, name its host with "
                "--allowed-host",
            )  # fmt: skip
            return
        for origin in origins:
            if not self._origin_ok(origin):
                await send_error(
                    send, 403, "forbidden_origin",
                    f"Origin {origin[:100]!r} may not use this server: only pages on this machine "
                    "(http(s)://localhost, 127.0.0.1, [::1]) or an origin named with "
                    "--allowed-origin may",
                )  # fmt: skip
                return
        await self.app(scope, receive, send)
