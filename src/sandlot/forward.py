"""Port forwarding: a host address whose TCP connections reach a port inside the sandbox.

`Sandbox.forward_port()` listens on the host (127.0.0.1) and offers every accepted socket to the
backend's `_forward_handover` first (a backend that shares this host's kernel can hand the
socket itself into the sandbox, adr/0055), else hands the connection to its
`_forward_connection`, which carries its bytes both ways until either side closes. Backends
with a byte channel of their own use it (Coder: an SSH direct-tcpip channel on the sandbox's
one connection; local: the host's own port); the default is a relay program started in the
sandbox per connection, its stdin and stdout spliced to the connection, which works wherever
commands run (a Docker container without a network included). adr/0024.
"""

from __future__ import annotations

import contextlib
import errno
import re
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import anyio
import anyio.abc

from . import telemetry
from ._engine import Engine, SpawnSpec, discard
from .errors import ConfigurationError
from .errors import ForwardRelayMissingError as ForwardRelayMissingError  # home until errors.py
from .errors import PortForwardUnsupportedError as PortForwardUnsupportedError

#: How a sandbox carries one accepted connection to its port (its `_forward_connection`).
Connect = Callable[[anyio.abc.ByteStream, str, int], Awaitable[None]]
#: How a sandbox may take an accepted socket itself (its `_forward_handover`): True when it
#: carried the connection to its end, False when it did not touch it.
Handover = Callable[[socket.socket, str, int], Awaitable[bool]]

#: Read size of every copy loop.
CHUNK = 64 << 10


@dataclass(frozen=True)
class ForwardAddress:
    """Where the forward listens on the host, and what it reaches in the sandbox."""

    host: str
    port: int
    remote_host: str
    remote_port: int

    @property
    def url(self) -> str:
        """`http://host:port` (the usual thing to do with a forwarded port)."""
        return f"http://{self.host}:{self.port}"


# The relay: connect to $1:$2 in the sandbox, copy stdin to the socket and the socket to
# stdout. python3 when present (it half-closes properly), else socat, nc or busybox's nc.
# Exit 111 with a line on stderr when nothing listens; 127 when no relay program exists.
_PY_RELAY = r"""
import os, socket, sys, threading
host, port = sys.argv[1], int(sys.argv[2])
try:
    s = socket.create_connection((host, port))
except OSError as e:
    sys.stderr.write("sandlot-forward: %s:%d: %s\n" % (host, port, e.strerror or e))
    sys.exit(111)
def up():
    while True:
        data = os.read(0, 65536)
        if not data:
            break
        s.sendall(data)
    try:
        s.shutdown(socket.SHUT_WR)
    except OSError:
        pass
threading.Thread(target=up, daemon=True).start()
while True:
    try:
        data = s.recv(65536)
    except OSError:
        break
    if not data:
        break
    view = memoryview(data)
    while view:
        view = view[os.write(1, view):]
"""

RELAY_SCRIPT = r"""
if command -v python3 >/dev/null 2>&1; then exec python3 -c "$0" "$1" "$2"; fi
if command -v socat >/dev/null 2>&1; then exec socat - "TCP:$1:$2"; fi
if command -v nc >/dev/null 2>&1; then exec nc "$1" "$2"; fi
if command -v busybox >/dev/null 2>&1 && busybox nc --help >/dev/null 2>&1; then
  exec busybox nc "$1" "$2"
fi
echo "sandlot-forward: no relay program" >&2
exit 127
"""

PROBE_SCRIPT = r"""
for p in python3 socat nc; do command -v "$p" >/dev/null 2>&1 && { echo "$p"; exit 0; }; done
command -v busybox >/dev/null 2>&1 && busybox nc --help >/dev/null 2>&1 && { echo busybox; exit 0; }
exit 127
"""

RELAY_MISSING = (
    "port forwarding needs a relay program in the sandbox: python3, socat, nc (netcat) or "
    "busybox with its nc applet; none was found. Install one in the image or template"
)

_HOST = re.compile(r"^[A-Za-z0-9._:\[\]-]+$")


def check_target(remote_port: int, local_port: int, remote_host: str) -> None:
    """Refuse what cannot be a port or a host name before anything listens."""
    for name, port, low in (("remote_port", remote_port, 1), ("local_port", local_port, 0)):
        if isinstance(port, bool) or not isinstance(port, int) or not low <= port <= 65535:
            raise ConfigurationError(f"{name} must be an integer in {low}..65535, got {port!r}")
    if (not isinstance(remote_host, str) or not _HOST.match(remote_host)
            or remote_host.startswith("-")):
        raise ConfigurationError(
            f"remote_host {remote_host!r} is not a host name or address; give e.g. 127.0.0.1 "
            "or localhost"
        )


def _listen(local_port: int) -> socket.socket:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", local_port))
        listener.listen(128)
        listener.setblocking(False)
    except BaseException:
        listener.close()
        raise
    return listener


async def accept(listener: socket.socket) -> socket.socket:
    """The next connection on a non-blocking listening socket (TCP or Unix). A peer that
    gave up before it was taken is skipped; out of descriptors for now, the connection waits
    in the backlog until one is free (the listener's owner must not fail for it)."""
    while True:
        await anyio.wait_readable(listener)
        try:
            return listener.accept()[0]
        except (BlockingIOError, InterruptedError):
            continue
        except OSError as exc:
            if exc.errno in (errno.ECONNABORTED, errno.EPROTO):
                continue
            if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                await anyio.sleep(0.1)
                continue
            raise


async def _accept(listener: socket.socket) -> socket.socket:
    client = await accept(listener)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client


@contextlib.asynccontextmanager
async def forwarding(
    engine: Engine, connect: Connect, remote_port: int, *, local_port: int, remote_host: str,
    handover: Handover | None = None,
) -> AsyncIterator[ForwardAddress]:
    """Listen on 127.0.0.1:local_port until the block ends (or the sandbox closes), offering
    each accepted socket to `handover` (the backend's `_forward_handover`), else carrying the
    connection with `connect` (the backend's `_forward_connection`).

    Sockets are accepted here, not by an anyio listener: a stream wrapper may read the
    client's first bytes before a handover, and those would be lost to the sandbox."""
    listener = _listen(local_port)
    port = listener.getsockname()[1]
    address = ForwardAddress("127.0.0.1", port, remote_host, remote_port)

    async def handle(raw: socket.socket) -> None:
        attributes: dict[str, str | int] = {"sandlot.sandbox.name": engine.name,
                                             "server.port": remote_port,
                                             "sandlot.forward.local_port": port}
        with telemetry.span("sandlot.forward.connection", attributes):
            try:
                if handover is not None and await handover(raw, remote_host, remote_port):
                    raw.close()
                    return
                client = await anyio.abc.SocketStream.from_socket(raw)
            except Exception:  # one connection's failure never ends the forward
                raw.close()
                return
            except BaseException:
                raw.close()
                raise
            async with client:
                try:
                    await connect(client, remote_host, remote_port)
                except Exception:  # one connection's failure never ends the forward
                    return

    async def serve(group: anyio.abc.TaskGroup) -> None:
        while True:
            group.start_soon(handle, await _accept(listener))

    try:
        async with anyio.create_task_group() as group:
            with engine.forward(group.cancel_scope):
                group.start_soon(serve, group)
                try:
                    yield address
                finally:
                    group.cancel_scope.cancel()
    except BaseExceptionGroup as group_error:
        # The block's own exception, not wrapped by the task group that served it.
        if len(group_error.exceptions) == 1:
            raise group_error.exceptions[0] from None
        raise
    finally:
        listener.close()


async def relay_through_command(
    engine: Engine, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
) -> None:
    """One connection through a relay program in the sandbox (the default transport)."""

    async def upstream() -> AsyncIterator[bytes]:
        while True:
            try:
                data = await client.receive(CHUNK)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            yield data

    async def downstream(data: bytes) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await client.send(data)

    spec = SpawnSpec(
        argv=["sh", "-c", RELAY_SCRIPT, _PY_RELAY, remote_host, str(remote_port)],
        cwd="/", env={}, sudo=False, stdin=upstream(), stdout=downstream, stderr=discard,
        display=f"sandlot: forward to {remote_host}:{remote_port}",
    )
    running = await engine.spawn_unmarked(spec)
    try:
        await running.wait()
    except BaseException:
        # The connection goes first: to a peer that never reads, the relay's output waits
        # in a send that never ends, and the relay's end (its client draining its output)
        # with it: leaving a forward took 10 s per such connection. Closed, every send
        # fails at once (adr/0032).
        with anyio.CancelScope(shield=True):
            await client.aclose()
        raise
    finally:
        with anyio.CancelScope(shield=True):
            await running.kill()


async def splice(client: anyio.abc.ByteStream, remote: anyio.abc.ByteStream) -> None:
    """Copy both ways between two byte streams; each direction's end is passed on as EOF."""

    async def copy(source: anyio.abc.ByteStream, sink: anyio.abc.ByteStream) -> None:
        try:
            while True:
                data = await source.receive(CHUNK)
                await sink.send(data)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        with contextlib.suppress(Exception):
            await sink.send_eof()

    async with anyio.create_task_group() as group:
        group.start_soon(copy, client, remote)
        await copy(remote, client)
        group.cancel_scope.cancel()
