"""Idle, half-open and stalling clients cannot take the server down or pin its sockets."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import httpx
import pytest

from sandlot.server.runner import SandboxServer
from tests.server.conftest import serve

TOKEN = "hostile-client-token-0123456789"
HEAD_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
#: The server closes late connections on a timer: allow for a loaded machine.
SLACK = 20.0


@pytest.fixture(scope="module")
def server(runtimes: None) -> Iterator[SandboxServer]:
    with serve(
        mode="shell", token=TOKEN, max_connections=8,
        header_timeout=HEAD_TIMEOUT, body_timeout=BODY_TIMEOUT,
    ) as running:  # fmt: skip
        yield running


def address(server: SandboxServer) -> tuple[str, int]:
    assert server.url is not None
    parts = urlsplit(server.url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def authorized_run(server: SandboxServer) -> httpx.Response:
    return httpx.post(
        f"{server.url}/execute", json={"code": "echo $((6 * 7))"},
        headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60,
    )  # fmt: skip


def test_a_hundred_idle_connections_do_not_turn_authorized_requests_away(
    server: SandboxServer,
) -> None:
    with contextlib.ExitStack() as stack:
        for i in range(100):
            idle = stack.enter_context(socket.create_connection(address(server), timeout=10))
            if i % 2:  # half of them start a request and never finish its head
                idle.sendall(b"POST /execute HTTP/1.1\r\n")
        answer = authorized_run(server)
        assert answer.status_code == 200, answer.text
        assert answer.json()["stdout"] == "42\n"


def test_a_connection_that_never_finishes_its_head_is_closed(server: SandboxServer) -> None:
    with socket.create_connection(address(server), timeout=HEAD_TIMEOUT + SLACK) as stalled:
        stalled.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")  # no blank line: head unfinished
        started = time.monotonic()
        assert stalled.recv(1024) == b"", "the server sent something instead of closing"
        assert time.monotonic() - started < HEAD_TIMEOUT + SLACK


def test_a_stalled_body_gets_408_json(server: SandboxServer) -> None:
    head = (
        "POST /execute HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n"
    )
    with socket.create_connection(address(server), timeout=BODY_TIMEOUT + SLACK) as slow:
        slow.sendall(head.encode() + b'{"code": ')
        received = b""
        while b"}" not in received:  # the head and the JSON body may come in separate reads
            chunk = slow.recv(4096)
            if not chunk:
                break
            received += chunk
        answer = received.decode()
    assert answer.startswith("HTTP/1.1 408"), answer
    assert '"error": "request_timeout"' in answer or '"error":"request_timeout"' in answer

