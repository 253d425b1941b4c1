"""Leaving a Docker forward_port block is bounded even when a connection's peer never reads
(issue 35.4): a server in the container that accepts and never reads while the host sends
megabytes, and a host client that never reads while the container's server writes. The block
used to take ~40 s to end; every relay process, in the container and on the host, is gone
after it."""

from __future__ import annotations

import os
import random
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import anyio.abc
import pytest

from sandlot.backends.docker import DockerSandbox
from tests.backends import docker as docker_backend

pytestmark = pytest.mark.anyio

CONNECTIONS = 4
#: Where the bug took ~40 s; the goal is < 6 s, this leaves room for a loaded machine.
BOUND = 15.0

# mode "hold": accept and never read; mode "flood": accept and write without end.
SERVER = r"""
import socket, sys, threading
mode, port = sys.argv[1], int(sys.argv[2])
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
held = []
def flood(c):
    try:
        while True:
            c.sendall(b"x" * 65536)
    except OSError:
        pass
while True:
    c, _ = s.accept()
    held.append(c)
    if mode == "flood":
        threading.Thread(target=flood, args=(c,), daemon=True).start()
"""

UP = r"""
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
"""

# The pattern is split so this probe's own command line does not match it.
RELAYS_IN_CONTAINER = r"""
import os
found = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        line = open("/proc/%s/cmdline" % pid, "rb").read()
    except OSError:
        continue
    if ("sandlot-" + "forward").encode() in line:
        found.append(pid)
print(" ".join(found))
"""


@pytest.fixture
async def sandbox() -> AsyncIterator[DockerSandbox]:
    provider = docker_backend.toolchain_provider()
    box = await provider.create()
    assert isinstance(box, DockerSandbox)
    try:
        yield box
    finally:
        await box.close()


def _host_relays(container_id: str) -> list[int]:
    """`docker exec` clients on this host still carrying a relay into the container."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            line = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if container_id.encode() in line and b"sandlot-forward" in line:
            found.append(int(entry.name))
    return found


async def _fill(conn: anyio.abc.SocketStream) -> int:
    """Send until the far side stops taking bytes (no one reads there)."""
    sent = 0
    block = b"y" * (64 << 10)
    while True:
        with anyio.move_on_after(2) as stalled:
            await conn.send(block)
        if stalled.cancelled_caught:
            return sent
        sent += len(block)
        if sent > (256 << 20):
            raise AssertionError("256 MiB went through: something reads after all")


@pytest.mark.parametrize("mode", ["hold", "flood"])
async def test_leaving_a_forward_whose_peers_never_read_is_bounded(
    sandbox: DockerSandbox, mode: str
) -> None:
    port = random.randint(20000, 45000)
    server = await sandbox.start(["python3", "-c", SERVER, mode, str(port)])
    try:
        up = await sandbox.exec(["python3", "-c", UP, str(port)], timeout=60)
        assert up.exit_code == 0, up.stderr
        conns: list[anyio.abc.SocketStream] = []
        started = time.monotonic()
        try:
            with anyio.fail_after(180):
                async with sandbox.forward_port(port) as address:
                    for _ in range(CONNECTIONS):
                        conns.append(await anyio.connect_tcp(address.host, address.port))
                    if mode == "hold":
                        sent = [await _fill(conn) for conn in conns]
                        assert min(sent) >= 1 << 20, sent  # megabytes in the pipes, unread
                    else:
                        await anyio.sleep(3)  # the container's server fills every pipe
                    assert len(_host_relays(sandbox.container_id)) == CONNECTIONS
                    started = time.monotonic()  # the block ends here
                took = time.monotonic() - started
        finally:
            for conn in conns:
                await conn.aclose()
        assert took < BOUND, f"leaving the block took {took:.1f}s"
        assert _host_relays(sandbox.container_id) == []
        left = await sandbox.exec(["python3", "-c", RELAYS_IN_CONTAINER], timeout=60)
        assert left.stdout.strip() == "", f"relays left in the container: {left.stdout}"
    finally:
        await server.kill()
