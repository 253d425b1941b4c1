"""Forwarded sockets handed to the session helper over a Unix socket in a read-only mount
(adr/0055), on the test engine with the toolchain image (python3 for the helper): what the
container can and cannot do with the mount, a helper killed in the middle of a connection, a
helper that cannot connect (the forward takes the stream), and the directory's lifetime."""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

import sandlot
from sandlot.backends.docker import DockerSandbox, handover
from tests import docker_engine
from tests.backends import docker as docker_backend
from tests.docker.in_container import UP
from tests.helpers import receive_until_eof

pytestmark = pytest.mark.anyio

Open = Callable[..., Any]
PORT = 18440

# Serves each connection a stream of bytes without end ("flood"), or one sha256 of what it
# received until the client's half-close ("digest").
SERVER = r"""
import hashlib, socket, sys, threading
mode, port = sys.argv[1], int(sys.argv[2])
def flood(c):
    try:
        while True:
            c.sendall(b"y" * 65536)
    except OSError:
        pass
def digest(c):
    h = hashlib.sha256()
    while True:
        data = c.recv(1 << 16)
        if not data:
            break
        h.update(data)
    c.sendall(h.hexdigest().encode())
    c.close()
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(64)
while True:
    c = s.accept()[0]
    threading.Thread(target={"flood": flood, "digest": digest}[mode], args=(c,),
                     daemon=True).start()
"""



@pytest.fixture
def opened(toolchain_opened: Open) -> Open:
    return toolchain_opened


@contextlib.asynccontextmanager
async def serving(box: DockerSandbox, mode: str, port: int = PORT) -> AsyncIterator[None]:
    """SERVER in `mode` on `port` for the block, killed after it."""
    server = await _serve(box, mode, port)
    try:
        yield
    finally:
        await server.kill()


async def _serve(box: DockerSandbox, mode: str, port: int = PORT) -> sandlot.Process:
    server = await box.start(["python3", "-c", SERVER, mode, str(port)])
    await box.exec(["python3", "-c", UP, str(port)], timeout=60, check=True)
    return server


async def _digest_through(address: sandlot.ForwardAddress, payload: bytes) -> str:
    stream = await anyio.connect_tcp(address.host, address.port)
    async with stream:
        await stream.send(payload)
        await stream.send_eof()
        return (await receive_until_eof(stream)).decode()


def _root(engine: docker_engine.DockerEngine, box: DockerSandbox, script: str) -> str:
    done = engine.docker("exec", "-u", "0", box.container_id, "sh", "-c", script, check=False)
    return done.stdout + done.stderr


async def test_many_connections_at_once_skip_the_stream_byte_for_byte(opened: Open) -> None:
    box = await opened()
    assert box.handover is not None and not box.handover.active
    async with serving(box, "digest"):
        payloads = [os.urandom(n) for n in (0, 1, 65536, 3 << 20)] * 8
        got: dict[int, str] = {}
        async with box.forward_port(PORT) as address:

            async def one(i: int) -> None:
                got[i] = await _digest_through(address, payloads[i])

            async with anyio.create_task_group() as group:
                for i in range(len(payloads)):
                    group.start_soon(one, i)
            assert box.handover.active
        assert got == {i: hashlib.sha256(p).hexdigest() for i, p in enumerate(payloads)}


async def test_the_mount_is_read_only_and_holds_no_socket_between_handovers(
    opened: Open,
) -> None:
    engine = docker_backend.engine()
    box = await opened()
    async with serving(box, "digest"), box.forward_port(PORT) as address:
        assert await _digest_through(address, b"x") == hashlib.sha256(b"x").hexdigest()
    assert box.handover is not None
    # Even root in the container can make, replace or link nothing there; the socket the
    # helper connected to was removed once it had.
    said = _root(engine, box, f"cd {handover.CONTAINER_DIR} && touch f; ln -s / l; "
                              "mkdir d; ls -A; echo end")
    assert said.count("Read-only file system") == 3, said
    assert "end" in said and "s-" not in said, said
    assert sorted(os.listdir(box.handover.folder)) == []


async def test_a_peer_without_the_token_is_closed_and_the_helper_is_taken(
    tmp_path: Path,
) -> None:
    """The host's accept, on real sockets: a process that connects first and says the wrong
    thing, and one that says nothing, get nothing; the helper's connection is the one kept."""
    import socket

    path = tmp_path / "s"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(path))
    listener.listen(8)
    listener.setblocking(False)
    token = b"0123456789abcdef0123456789abcdef"

    class Waiting:  # the helper's request for the channel: it ends only with the channel
        result = None

        async def receive(self) -> None:
            await anyio.sleep_forever()

    peers = []
    wrong = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    wrong.connect(str(path))
    wrong.send(b"f" * len(token))
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    silent.connect(str(path))
    helper = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    helper.connect(str(path))
    helper.send(token)
    peers += [wrong, silent, helper]
    try:
        kept = await handover._accept_proven(listener, token, Waiting())  # type: ignore[arg-type]
        assert kept is not None
        kept.send(b"hello")
        assert helper.recv(16) == b"hello"
        for refused in (wrong, silent):
            assert refused.recv(16) == b""  # closed, nothing sent
        kept.close()
    finally:
        for peer in peers:
            peer.close()
        listener.close()


async def test_a_helper_killed_mid_connection_ends_it_and_the_next_one_works(
    opened: Open,
) -> None:
    engine = docker_backend.engine()
    box = await opened()
    await _serve(box, "flood")
    async with box.forward_port(PORT) as flooding, box.forward_port(PORT + 1) as digesting:
        stream = await anyio.connect_tcp(flooding.host, flooding.port)
        async with stream:
            with anyio.fail_after(60):
                assert await stream.receive()
            # The agent's own command kills the helper (and with it the commands it ran,
            # the server included).
            _root(engine, box, "pkill -KILL -f sandlot-session; true")
            # The client's connection ends (not hangs) once its helper is gone.
            with anyio.fail_after(60):
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError,
                                         ConnectionResetError):
                    while True:
                        await stream.receive()
        # The next command starts a new helper, and the next connection a channel to it.
        async with serving(box, "digest", PORT + 1):
            with anyio.fail_after(120):
                answer = await _digest_through(digesting, b"again")
            assert answer == hashlib.sha256(b"again").hexdigest()
            assert box.handover is not None and box.handover.active


async def test_a_helper_that_cannot_reach_the_socket_leaves_forwards_on_the_stream(
    opened: Open,
) -> None:
    """As with an engine in a VM, where the mount holds no reachable socket: the helper's
    connect fails (here a user who may not enter the directory), the handover turns off, and
    every forward still works over the helper's stream."""
    box = await opened(user="1234:1234")
    assert box.handover is not None
    box.handover.folder.chmod(0o700)
    async with serving(box, "digest"):
        async with box.forward_port(PORT) as address:
            for payload in (b"one", os.urandom(1 << 20)):
                got = await _digest_through(address, payload)
                assert got == hashlib.sha256(payload).hexdigest()
        assert box.handover.off is not None and not box.handover.active


async def test_the_directory_goes_with_a_deleted_container_and_stays_with_a_kept_one(
    opened: Open,
) -> None:
    engine = docker_backend.engine()
    deleted = await opened()
    assert deleted.handover is not None
    folder = deleted.handover.folder
    assert folder.is_dir() and oct(folder.stat().st_mode & 0o777) == "0o755"
    await deleted.close()
    assert not folder.exists()

    kept = await opened(on_close="stop")
    assert kept.handover is not None
    kept_folder = kept.handover.folder
    await kept.close()
    assert kept_folder.is_dir()
    # Attached again later, the container's handover is found by its mount and used.
    again = sandlot.docker(attach=kept.name, docker_host=engine.host, on_close="delete")
    async with again.session() as box:
        assert isinstance(box, DockerSandbox)
        assert box.handover is not None and box.handover.folder == kept_folder
        async with serving(box, "digest"):
            async with box.forward_port(PORT) as address:
                assert await _digest_through(address, b"k") == hashlib.sha256(b"k").hexdigest()
            assert box.handover.active
    assert not kept_folder.exists()


def test_a_session_label_is_never_taken_as_a_path() -> None:
    for label in ("../../etc", "0123456789abcdef/..", "", "0123456789ABCDEF", "x" * 16):
        assert handover.dir_of_session(label) is None
    made = handover.dir_of_session("0123456789abcdef")
    assert made is not None and made.name == "fwd-0123456789abcdef"
    assert handover.existing_dir("/etc") is None
    assert handover.existing_dir(str(made.parent / "fwd-..")) is None
