"""Forwarded connections handed to the session helper as descriptors, INSIDE the sandbox
(adr/0055).

Where the host and the sandbox share a kernel (a Docker engine on this host), the host passes
each accepted client socket itself over a Unix socket (SCM_RIGHTS) instead of carrying its
bytes as frames on the helper's stream: the helper connects to the port and copies between the
two sockets, and the host is out of the data path.

- `handover_channel` {"path", "token"}: connect to the host's Unix socket at PATH (a
  SOCK_SEQPACKET socket in a read-only bind mount), send TOKEN as the first message, then take
  one client socket per message (`tag NUL host NUL port`) until the host closes the channel
  or cancels the request. Each is served at once: connect to host:port in the sandbox and
  copy both ways, each direction's end passed on as a half-close.
- `adopt` {"tag"}: the request that owns the connection handed over as TAG (sent beside it,
  so the connection does not wait for it): returns {} once both directions ended, {"error",
  "refused": true} when nothing accepted the connection; a cancel shuts both sockets down.
"""

from __future__ import annotations

import array
import contextlib
import socket
import threading
import time
from typing import Any

from sandlot._session.helper.core import Request, op

CONNECT_TIMEOUT = 10.0
#: How long `adopt` waits for its connection (the host sends it just before the request).
CLAIM_TIMEOUT = 10.0
#: Largest read of a copy loop.
CHUNK = 256 << 10
#: Bytes of a message: tag, host and port (a host name is at most 253 bytes).
MESSAGE_MAX = 512

_lock = threading.Condition()
#: Connections handed over and not yet claimed by their `adopt`, by tag.
_handed: dict[str, _Connection] = {}


class _Connection:
    """One handed-over client socket and its connection to the sandbox's port."""

    def __init__(self, client: socket.socket) -> None:
        self.client = client
        self.server: socket.socket | None = None
        self.result: dict[str, Any] = {}
        self.done = threading.Event()
        self.stopped = False

    def serve(self, host: str, port: int) -> None:
        try:
            try:
                self.server = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
            except OSError as exc:
                self.result = {"error": f"{host}:{port}: {exc.strerror or exc}",
                               "refused": True}
                return
            self.server.settimeout(None)
            self.client.settimeout(None)
            if self.stopped:
                return
            up = threading.Thread(target=_copy, args=(self.client, self.server), daemon=True)
            up.start()
            _copy(self.server, self.client)
            up.join()
        finally:
            # The host keeps its own copy of the client socket: closing ours does not end
            # the connection (the half-closes and the host's close do).
            if self.server is not None:
                self.server.close()
            self.client.close()
            self.done.set()

    def stop(self) -> None:
        self.stopped = True
        for sock in (self.client, self.server):
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


def _receive(channel: socket.socket) -> tuple[bytes, list[int]] | None:
    """One message and the descriptors it carried; None once the channel ended."""
    space = socket.CMSG_SPACE(4 * 4)
    try:
        data, ancillary, _flags, _addr = channel.recvmsg(MESSAGE_MAX, space)
    except OSError:
        return None
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            got = array.array("i")
            got.frombytes(payload[:len(payload) - len(payload) % got.itemsize])
            fds.extend(got)
    if not data and not fds:
        return None
    return data, fds


def _close_fds(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            socket.socket(fileno=fd).close()


@op("handover_channel")
def handover_channel(req: Request) -> dict[str, Any]:
    path, token = str(req.args["path"]), str(req.args["token"])
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        channel.settimeout(CONNECT_TIMEOUT)
        channel.connect(path)
        channel.sendall(token.encode())
        channel.settimeout(None)
    except OSError as exc:
        channel.close()
        return {"error": f"{path}: {exc.strerror or exc}"}

    def stop() -> None:
        with contextlib.suppress(OSError):
            channel.shutdown(socket.SHUT_RDWR)

    req.on_cancel(stop)
    try:
        while True:
            message = _receive(channel)
            if message is None:
                break
            fields, fds = message[0].split(b"\0"), message[1]
            if len(fds) != 1 or len(fields) != 3:
                _close_fds(fds)
                continue
            tag, host = fields[0].decode("ascii", "replace"), fields[1].decode("ascii", "replace")
            connection = _Connection(socket.socket(fileno=fds[0]))
            with _lock:
                _handed[tag] = connection
                _lock.notify_all()
            threading.Thread(target=connection.serve, args=(host, int(fields[2])),
                             daemon=True).start()
    finally:
        channel.close()
    return {}


def _claim(tag: str, req: Request) -> _Connection | None:
    deadline = time.monotonic() + CLAIM_TIMEOUT
    with _lock:
        while tag not in _handed:
            left = deadline - time.monotonic()
            if left <= 0 or req.cancelled.is_set():
                return None
            _lock.wait(min(left, 0.5))
        return _handed.pop(tag)


def _copy(source: socket.socket, sink: socket.socket) -> None:
    buffer = bytearray(CHUNK)
    view = memoryview(buffer)
    try:
        while True:
            n = source.recv_into(buffer)
            if not n:
                break
            sink.sendall(view[:n])
    except OSError:
        pass
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


@op("adopt")
def adopt(req: Request) -> dict[str, Any]:
    connection = _claim(str(req.args["tag"]), req)
    if connection is None:
        return {"error": "the connection was not handed over"}
    req.on_cancel(connection.stop)
    connection.done.wait()
    return connection.result
