"""ASGI middleware that acts before any body is read: bearer auth, the bound on requests in
flight, and the body's size and read deadline."""

from __future__ import annotations

import asyncio
import hmac
import json

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send


async def send_error(send: Send, status: int, error: str, detail: str, **headers: str) -> None:
    """Answer with the server's JSON error shape (see models.ErrorResponse)."""
    body = json.dumps({"error": error, "detail": detail}).encode()
    raw_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        *((k.lower().replace("_", "-").encode(), v.encode()) for k, v in headers.items()),
    ]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """Every HTTP request must carry `Authorization: Bearer <token>`, compared in constant time."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = b""
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value
                break
        # The scheme is case-insensitive (RFC 7235); the token is not.
        scheme, _, rest = given.partition(b" ")
        normalized = b"Bearer " + rest.strip() if scheme.lower() == b"bearer" else given
        if not hmac.compare_digest(normalized, self._expected):
            await send_error(
                send,
                401,
                "unauthorized",
                "missing or wrong bearer token: send 'Authorization: Bearer <token>' with the "
                "server's $SANDLOT_TOKEN",
                www_authenticate="Bearer",
            )
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuse request bodies over `limit` bytes with 413, by header or while reading.

    The body is read here, before the app runs (it is small by construction), so an
    oversized body never reaches the JSON parser and the answer is always a clean 413.
    """

    def __init__(self, app: ASGIApp, limit: int, read_timeout: float = 30.0) -> None:
        self.app = app
        self.limit = limit
        self.read_timeout = read_timeout

    def _detail(self) -> str:
        return f"request body exceeds this server's limit of {self.limit} bytes; send less code"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
                if declared > self.limit:
                    await send_error(send, 413, "too_large", self._detail())
                    return
        chunks: list[bytes] = []
        size = 0
        # A client that stalls mid-body must not hold a connection (and a request slot) forever.
        with anyio.move_on_after(self.read_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return  # the client went away before sending its body
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.limit:
                    await send_error(send, 413, "too_large", self._detail())
                    return
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            await send_error(
                send, 408, "request_timeout",
                f"the request body did not arrive within {self.read_timeout:g}s; send it whole",
            )  # fmt: skip
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class ActiveRequests:
    """At most `limit` requests in flight; beyond that, 503 JSON at once.

    Only requests count, not open connections: idle or half-open connections (bounded by the
    protocol's head deadline) never turn an authorized request away.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit
        self.active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.active >= self.limit:
            await send_error(
                send, 503, "overloaded",
                f"{self.limit} requests are already in flight; retry after a moment",
                retry_after="1",
            )  # fmt: skip
            return
        self.active += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active -= 1


class ShutdownDeadline:
    """When the server shuts down, a request still running after `grace` seconds is ended and
    answered 503 JSON (`shutting_down`), before uvicorn would cancel it into a text/plain 500."""

    def __init__(self, app: ASGIApp, grace: float, stopping: asyncio.Event) -> None:
        self.app = app
        self.grace = grace
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False
        ended_by_shutdown = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async with anyio.create_task_group() as group:

            async def deadline() -> None:
                nonlocal ended_by_shutdown
                await self.stopping.wait()
                await anyio.sleep(self.grace)
                ended_by_shutdown = True
                group.cancel_scope.cancel()

            group.start_soon(deadline)
            await self.app(scope, receive, tracking_send)
            group.cancel_scope.cancel()
        if ended_by_shutdown and not started:
            await send_error(
                send, 503, "shutting_down",
                f"the server is shutting down and the run did not end within {self.grace:g}s; "
                "it was ended",
                retry_after="1",
            )  # fmt: skip
