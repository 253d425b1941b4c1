"""The test servers' port: outside the ephemeral range, and never one an outgoing connection
holds (its bind would fail with EADDRINUSE even with SO_REUSEADDR, as it did in CI)."""

from __future__ import annotations

import socket

from sandlot.testing import ports


def test_a_port_below_the_ephemeral_range_that_a_server_can_bind() -> None:
    port = ports.listen_port()
    assert ports._LOWEST <= port < ports._ephemeral_start()
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))


def test_an_outgoing_connections_port_is_not_offered() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        client = socket.socket()
        client.connect(listener.getsockname())
        accepted, _ = listener.accept()
        with accepted:
            held = client.getsockname()[1]
            assert not ports._bindable(held)
            client.close()  # closed first by the client: its TIME_WAIT still holds the port
            assert not ports._bindable(held)
