"""The forward's accept loop: a connection the peer already gave up, or a moment without a
free descriptor, neither ends the forward; the next connection is taken."""

from __future__ import annotations

import errno
import socket

import anyio
import pytest

from sandlot import forward

pytestmark = pytest.mark.anyio


class _Flaky(socket.socket):
    """A listening socket whose first accepts fail as the kernel's would."""

    def __init__(self, *args: int) -> None:
        super().__init__(*args)
        self.failures = [errno.ECONNABORTED, errno.EMFILE]

    def accept(self) -> tuple[socket.socket, object]:
        if self.failures:
            raise OSError(self.failures.pop(0), "simulated")
        return super().accept()


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_accept_goes_on_after_an_aborted_peer_and_a_descriptor_shortage(
    anyio_backend: str,
) -> None:
    listener = _Flaky(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    peer = socket.create_connection(listener.getsockname())
    try:
        with anyio.fail_after(10):
            taken = await forward._accept(listener)
        assert listener.failures == []
        assert taken.getpeername() == peer.getsockname()
        assert taken.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        taken.close()
    finally:
        peer.close()
        listener.close()
