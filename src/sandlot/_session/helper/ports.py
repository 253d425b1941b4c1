"""Forwarded connections served by the session helper, INSIDE the sandbox (adr/0043):
`connect` opens a TCP connection to a port in the sandbox and carries its bytes both ways as
DATA frames on the helper's one stream, each direction's end passed on as a half-close.

Args: {"host": name, "port": n, "window": bytes}. Control frames: {"connected": true} once
the connection is open, {"eof": true} when the sandbox's side stopped sending. RESULT: {} once
both directions ended (or the host cancelled), {"error": why, "refused": true} when nothing
accepted the connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from typing import Any

from sandlot._session.helper.core import STDOUT, Request, op
from sandlot._session.helper.flow import WINDOW, Reader, Writer, control, route_input

CONNECT_TIMEOUT = 10.0


def _recv(sock: socket.socket) -> Any:
    def read(fd: int, size: int) -> bytes:
        return sock.recv(size)

    return read


@op("connect")
def connect(req: Request) -> dict[str, Any]:
    host, port = str(req.args["host"]), int(req.args["port"])
    window = int(req.args.get("window", WINDOW))
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_TIMEOUT)
    except OSError as exc:
        return {"error": f"{host}:{port}: {exc.strerror or exc}", "refused": True}
    sock.settimeout(None)
    finished = threading.Event()

    def half_close() -> None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    control(req, connected=True)
    reader = Reader(req, sock.fileno(), STDOUT, window, read=_recv(sock))
    writer = Writer(req, sock.sendall, half_close)

    def close() -> None:  # the host gave the connection up
        if not finished.is_set():
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            writer.put(None)

    req.on_cancel(close)
    router = threading.Thread(target=route_input,
                              args=(req, {STDOUT: reader}, writer, close, finished),
                              daemon=True)
    router.start()
    try:
        reader.done()
        control(req, eof=True)
        # The host's side may still be sending: the connection ends when it ends too (its
        # `e`, or a cancel that shuts the socket down).
        writer.thread.join()
    finally:
        finished.set()
        reader.abandon()
        if reader.done(5.0):
            sock.close()
        req.cancel()
    return {}
