"""Forwarded connections handed into the container as descriptors (adr/0055).

Over the session helper's stream (adr/0043) every forwarded byte crosses the docker client,
the engine and the container's shim, framed twice: a 200 MiB download ran at a fifth of a
direct one. Where the engine runs on this host's kernel, sandlot mounts a directory of its own
read-only into the container (`CONTAINER_DIR`); the host binds a SOCK_SEQPACKET Unix socket in
it, the helper connects once (proving itself with a one-time token sent over its stdin), and
each accepted client socket is then passed to the helper itself (SCM_RIGHTS). The helper
connects to the port and copies between the two sockets; the host is out of the data path.

What the container can do with it: nothing new. The mount is read-only (no file can be made,
replaced or linked there; connecting to a socket needs no write access to the mount), the host
only ever sends on the channel (it reads the token, then nothing: no descriptor goes the other
way), a process that connects without the token is closed, and what the helper is handed is
a connection meant for the sandbox's port anyway. Anything that fails -- no directory, an
engine in another kernel (Docker Desktop's VM: the connect fails), a helper too old -- turns
the handover off for the sandbox and the forward takes the helper's stream, with nothing lost.
"""

from __future__ import annotations

import array
import contextlib
import hmac
import itertools
import logging
import os
import re
import secrets
import shutil
import socket
import stat
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ..._session.client import Call, Session, SessionError
from ...forward import accept

if TYPE_CHECKING:
    from .cli import DockerCLI
    from .options import DockerOptions

log = logging.getLogger("sandlot")

#: Where the host's directory appears in the container (read-only).
CONTAINER_DIR = "/run/sandlot-forward"
#: Seconds the helper may take to connect and prove itself.
ESTABLISH_TIMEOUT = 10.0
#: Seconds a descriptor may wait for room on the channel (a helper that stopped reading).
SEND_TIMEOUT = 5.0
#: The longest host path of a socket (sun_path is 108 bytes with its NUL).
_MAX_PATH = 100
#: A session label as the provider makes it (secrets.token_hex(8)).
_SESSION = re.compile(r"[0-9a-f]{16}")


def wanted(options: DockerOptions, cli: DockerCLI) -> bool:
    """Whether a container of these options has (or gets) the handover mount: the session
    helper on, the handover not turned off, and an engine reached over a Unix socket (so,
    most likely, on this kernel; the helper's connect is the proof). A context may point
    anywhere: not assumed."""
    if not (options.session_helper and options.forward_handover) or cli.context:
        return False
    address = cli.docker_host or os.environ.get("DOCKER_HOST") or "unix://"
    return address.startswith("unix://")


def make_dir(session: str) -> Path | None:
    """A new directory for one container's handover socket, or None when none can be made
    safely (the parent is not ours, the path is too long for a socket)."""
    base = _base()
    folder = base / f"fwd-{session}"
    if len(str(folder)) + 12 > _MAX_PATH:
        return None
    try:
        with contextlib.suppress(FileExistsError):
            base.mkdir(mode=0o700)
        info = os.lstat(base)
        # A shared temporary directory: the parent must be ours and closed to others, or
        # another user could swap the socket's directory.
        if (not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid()
                or info.st_mode & 0o077):
            return None
        folder.mkdir()
        folder.chmod(0o755)  # the container's user, whoever it is, must reach the socket
    except OSError:
        return None
    return folder


def remove_dir(folder: Path | None) -> None:
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


def _base() -> Path:
    return Path(tempfile.gettempdir()) / f"sandlot-{os.getuid()}"


def dir_of_session(session: str) -> Path | None:
    """Where `make_dir(session)` put its directory; None for a session label that is not
    one sandlot makes (a label is the container's to say: never a path to trust)."""
    if not _SESSION.fullmatch(session):
        return None
    return _base() / f"fwd-{session}"


def existing_dir(source: str) -> Path | None:
    """SOURCE (a container's mount) when it is a handover directory of ours on this host."""
    folder = Path(source)
    if folder.parent != _base() or not folder.name.startswith("fwd-"):
        return None
    if dir_of_session(folder.name[4:]) is None:
        return None
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    return folder if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() else None


class Handover:
    """The host end of one container's handover channel."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.off: str | None = None
        self._channel: socket.socket | None = None
        self._call: Call | None = None
        self._generation = -1
        self._lock = anyio.Lock()
        self._tags = itertools.count(1)

    @property
    def active(self) -> bool:
        """Whether a channel to the helper is open (the last forwarded connection used it)."""
        return self._channel is not None

    async def carry(self, session: Session, client: socket.socket, host: str,
                    port: int) -> bool:
        """Hand `client` to the helper and wait for the connection's end; False (the client
        untouched) when the handover cannot be made."""
        channel = await self._ready(session)
        if channel is None:
            return False
        tag = str(next(self._tags))
        # The socket first, the request that owns it second: the helper connects to the port
        # as soon as the socket arrives, not after the request's trip through the engine.
        if not await self._send(channel, f"{tag}\0{host}\0{port}", client):
            return False
        call: Call | None = None
        try:
            call = await session.open("adopt", {"tag": tag})
            while await call.receive() is not None:
                pass  # `adopt` sends no output; its RESULT says the connection ended
        except SessionError:
            pass  # the helper is gone, and the connection with it
        finally:
            # Whatever ended it (the connection's end, a helper lost, the forward's end or the
            # sandbox's close), the helper's copy must not hold the client's connection open.
            with contextlib.suppress(OSError):
                client.shutdown(socket.SHUT_RDWR)
            if call is not None:
                await call.aclose()
        return True

    async def _ready(self, session: Session) -> socket.socket | None:
        if self.off is not None:
            return None
        channel = self._channel
        if channel is not None and self._generation == session.generation:
            return channel
        async with self._lock:
            if self._channel is not None and self._generation == session.generation:
                return self._channel
            await self._drop()
            try:
                made = await self._establish(session)
            except SessionError:
                return None  # the helper itself is off or lost: the stream path says so
            if made is None:
                return None
            self._channel, self._call = made
            self._generation = session.generation
            return self._channel

    async def _establish(self, session: Session) -> tuple[socket.socket, Call] | None:
        name = f"s-{secrets.token_hex(4)}"
        path = self.folder / name
        token = secrets.token_hex(16).encode()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            listener.bind(str(path))
            path.chmod(0o666)  # the container's user may not be ours
            listener.listen(8)
            listener.setblocking(False)
        except OSError as exc:
            listener.close()
            path.unlink(missing_ok=True)
            self._turn_off(f"cannot listen at {path}: {exc}")
            return None
        call: Call | None = None
        channel: socket.socket | None = None
        try:
            call = await session.open("handover_channel",
                                      {"path": f"{CONTAINER_DIR}/{name}", "token": token.decode()})
            channel = await _accept_proven(listener, token, call)
        finally:
            listener.close()
            path.unlink(missing_ok=True)
            if call is not None and channel is None:
                await call.aclose()
        if channel is None:
            error = (call.result or {}).get("error", "no connection in time")
            self._turn_off(f"the helper did not connect: {error}")
            return None
        return channel, call

    async def _send(self, channel: socket.socket, message: str, client: socket.socket) -> bool:
        rights = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [client.fileno()]))]
        with anyio.move_on_after(SEND_TIMEOUT):
            while True:
                try:
                    channel.sendmsg([message.encode()], rights)
                    return True
                except (BlockingIOError, InterruptedError):
                    await anyio.wait_writable(channel)
                except OSError as exc:
                    log.debug("handover channel lost: %s", exc)
                    break
        async with self._lock:
            if self._channel is channel:
                await self._drop()
        return False

    def _turn_off(self, why: str) -> None:
        self.off = why
        log.debug("forward handover off: %s; forwarded bytes take the helper's stream", why)

    async def _drop(self) -> None:
        """Close the channel; the helper's request for it ends with it."""
        channel, call, self._channel, self._call = self._channel, self._call, None, None
        if channel is not None:
            channel.close()
        if call is not None:
            await call.aclose()

    async def close(self) -> None:
        self.off = "the sandbox closed"
        await self._drop()


async def _accept_proven(listener: socket.socket, token: bytes,
                         call: Call) -> socket.socket | None:
    """The first connection that sends `token`; None when the helper's request ended first
    (it could not connect) or none came in time."""
    found: list[socket.socket] = []
    with anyio.move_on_after(ESTABLISH_TIMEOUT):
        async with anyio.create_task_group() as group:

            async def ended() -> None:
                with contextlib.suppress(SessionError):
                    while await call.receive() is not None:
                        pass
                group.cancel_scope.cancel()

            async def first_proven() -> None:
                while True:
                    peer = await accept(listener)
                    if await _proves(peer, token):
                        found.append(peer)
                        group.cancel_scope.cancel()
                        return
                    peer.close()

            group.start_soon(ended)
            group.start_soon(first_proven)
    return found[0] if found else None


async def _proves(peer: socket.socket, token: bytes) -> bool:
    """Whether the peer's first message is the token (read within a second; a process of
    the sandbox that connects and says nothing costs that second, no more)."""
    peer.setblocking(False)
    with anyio.move_on_after(1.0):
        while True:
            await anyio.wait_readable(peer)
            try:
                said = peer.recv(len(token) + 1)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                return False
            return hmac.compare_digest(said, token)
    return False

