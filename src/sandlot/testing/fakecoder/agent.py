"""The workspace agent: a real SSH server (asyncssh) on a unix socket, one process per agent.

It behaves like the SSH server inside coder's agent (agent/agentssh): no client authentication
(the tunnel already authenticated the user), every session runs in the agent's home directory,
a command runs as ``sh -c <command>`` in a process of its own session (like sshd), a session
without a command gets a login shell. It supports exec and shell requests, env requests, PTYs
(with window-size changes), stdin with EOF, exit status (or exit signal), signal requests and
flow control in both directions. When a channel closes early, the whole process group is killed.

The fault knob ``drop_marker`` makes the agent abort the SSH connection (no disconnect message,
like a broken network path) shortly after starting a command that contains the marker.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import signal
import socket
import struct
import termios
import time
from pathlib import Path
from typing import Any

import asyncssh

from . import faults, state

_CHUNK = 64 * 1024
_STDIN_HIGH_WATER = 1 << 20
_DROP_DELAY = 0.2

_SIGNALS = {
    name[3:]: getattr(signal, name)
    for name in dir(signal)
    if name.startswith("SIG")
    and not name.startswith("SIG_")
    and isinstance(getattr(signal, name), signal.Signals)
}


class AgentContext:
    """What every session of this agent needs to know."""

    def __init__(self, root: Path, agent_id: str, record: dict[str, Any]) -> None:
        self.root = root
        self.agent_id = agent_id
        self.record = record
        self.home = Path(record["home"])
        self.sessions: set[AgentSession] = set()

    def base_env(self) -> dict[str, str]:
        rec = self.record
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(self.home),
            "USER": rec["owner_name"],
            "LOGNAME": rec["owner_name"],
            "SHELL": "/bin/sh",
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            # Set by the real agent for every session (agent/agentssh/agentssh.go).
            "CODER": "true",
            "CODER_WORKSPACE_NAME": rec["workspace_name"],
            "CODER_WORKSPACE_OWNER_NAME": rec["owner_name"],
            "CODER_WORKSPACE_AGENT_NAME": rec["name"],
        }
        env.update(rec.get("env", {}))
        return env

    def should_drop(self, command: str) -> bool:
        """Consult (and consume) the drop_marker knob for this command."""
        st = state.load(self.root)
        knobs = faults.effective(st, self.record["workspace_name"])
        marker = knobs.get("drop_marker")
        if not marker or marker not in command:
            return False
        if knobs.get("drop_remaining") is None:
            return True
        with state.locked(self.root) as locked_state:
            return faults.take(locked_state, self.record["workspace_name"], "drop_remaining")


class AgentServer(asyncssh.SSHServer):
    def __init__(self, ctx: AgentContext) -> None:
        self._ctx = ctx
        self._conn: asyncssh.SSHServerConnection | None = None

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        self._conn = conn

    def begin_auth(self, username: str) -> bool:
        return False  # no authentication: the coder tunnel already did it

    def session_requested(self) -> asyncssh.SSHServerSession[bytes]:
        assert self._conn is not None
        return AgentSession(self._ctx, self._conn)

    def connection_requested(self, dest_host: str, dest_port: int, orig_host: str,
                             orig_port: int) -> bool:
        # direct-tcpip, as the real agent serves it (`coder port-forward`, ssh -L): asyncssh
        # connects to dest_host:dest_port from here and a refused port fails the channel open.
        return True


class AgentSession(asyncssh.SSHServerSession[bytes]):
    """One SSH session channel: a command (or shell) with its stdio."""

    def __init__(self, ctx: AgentContext, conn: asyncssh.SSHServerConnection) -> None:
        self._ctx = ctx
        self._conn = conn
        self._chan: asyncssh.SSHServerChannel[bytes] | None = None
        self._command: str | None = None
        self._term: str | None = None
        self._size: tuple[int, int] = (80, 24)
        self._proc: asyncio.subprocess.Process | None = None
        self._master: int | None = None
        self._pending: list[bytes] = []
        self._eof = False
        self._writable = asyncio.Event()
        self._writable.set()
        self._task: asyncio.Task[None] | None = None
        self._drainer: asyncio.Future[None] | None = None

    # --- requests ----------------------------------------------------------------------------

    def connection_made(self, chan: asyncssh.SSHServerChannel[bytes]) -> None:
        self._chan = chan
        self._ctx.sessions.add(self)

    def pty_requested(
        self, term_type: str, term_size: tuple[int, int, int, int], term_modes: Any
    ) -> bool:
        self._term = term_type
        width, height = term_size[0] or 80, term_size[1] or 24
        self._size = (width, height)
        return True

    def shell_requested(self) -> bool:
        self._command = None
        return True

    def exec_requested(self, command: str) -> bool:
        self._command = command
        return True

    def subsystem_requested(self, subsystem: str) -> bool:
        return False

    def session_started(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    # --- data from the client ----------------------------------------------------------------

    def data_received(self, data: bytes, datatype: int | None) -> None:
        if self._proc is None and self._master is None:
            self._pending.append(data)
            return
        self._write_stdin(data)

    def eof_received(self) -> bool:
        self._eof = True
        if self._proc is not None:
            self._close_stdin()
        return True  # keep our side open until the command has finished

    def signal_received(self, signal_name: str) -> None:
        number = _SIGNALS.get(signal_name.upper())
        if number is not None:
            self._signal_group(number)

    def break_received(self, msec: int) -> bool:
        self._signal_group(signal.SIGINT)
        return True

    def terminal_size_changed(self, width: int, height: int, pixwidth: int, pixheight: int) -> None:
        self._size = (width or 80, height or 24)
        if self._master is not None:
            _set_winsize(self._master, *self._size)

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._ctx.sessions.discard(self)
        self._writable.set()
        self.kill()

    # --- the process -------------------------------------------------------------------------

    def kill(self) -> None:
        """End the whole process group of this session (channel gone or agent stopping)."""
        if self._proc is not None and self._proc.returncode is None:
            self._signal_group(signal.SIGHUP)
            self._signal_group(signal.SIGKILL)

    def _signal_group(self, number: int) -> None:
        if self._proc is None or self._proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, number)

    def _write_stdin(self, data: bytes) -> None:
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.write(self._master, data)
            return
        assert self._proc is not None and self._proc.stdin is not None
        if self._proc.stdin.is_closing():
            return
        self._proc.stdin.write(data)
        transport = self._proc.stdin.transport
        if transport.get_write_buffer_size() > _STDIN_HIGH_WATER and self._chan is not None:
            self._chan.pause_reading()
            self._drainer = asyncio.ensure_future(self._drain_stdin())

    async def _drain_stdin(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        with contextlib.suppress(ConnectionError):
            await self._proc.stdin.drain()
        if self._chan is not None:
            self._chan.resume_reading()

    def _close_stdin(self) -> None:
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.write(self._master, b"\x04")  # ^D: end of input for a terminal
            return
        if self._proc is not None and self._proc.stdin is not None:
            self._proc.stdin.close()

    async def _run(self) -> None:
        chan = self._chan
        assert chan is not None
        env = self._ctx.base_env()
        env.update(chan.get_environment())
        command = self._command
        argv = ["/bin/sh", "-c", command] if command is not None else ["/bin/sh", "-l"]
        try:
            if self._term is not None:
                env["TERM"] = self._term
                await self._start_pty(argv, env)
            else:
                self._proc = await asyncio.create_subprocess_exec(
                    *argv,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                    cwd=self._ctx.home,
                    env=env,
                    start_new_session=True,
                )
        except OSError as exc:
            chan.write_stderr(f"fake coder agent: cannot start command: {exc}\n".encode())
            chan.exit(127)
            return
        for data in self._pending:
            self._write_stdin(data)
        self._pending.clear()
        if self._eof:
            self._close_stdin()
        if command is not None and self._ctx.should_drop(command):
            asyncio.get_running_loop().call_later(_DROP_DELAY, self._drop)
        await self._pump_until_exit()

    async def _start_pty(self, argv: list[str], env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        _set_winsize(master, *self._size)

        def controlling_tty() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        try:
            self._proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=self._ctx.home,
                env=env,
                start_new_session=True,
                preexec_fn=controlling_tty,
            )
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        self._master = master

    async def _pump_until_exit(self) -> None:
        chan = self._chan
        proc = self._proc
        assert chan is not None and proc is not None
        if self._master is not None:
            await self._pump_pty(self._master)
        else:
            assert proc.stdout is not None and proc.stderr is not None
            await asyncio.gather(
                self._pump(proc.stdout, chan.write),
                self._pump(proc.stderr, chan.write_stderr),
            )
        returncode = await proc.wait()
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None
        if chan.is_closing():
            return
        if returncode < 0:
            name = signal.Signals(-returncode).name[3:]
            chan.exit_with_signal(name)
        else:
            chan.exit(returncode)

    async def _pump(self, stream: asyncio.StreamReader, write: Any) -> None:
        while True:
            await self._writable.wait()
            data = await stream.read(_CHUNK)
            if not data:
                return
            if self._chan is None or self._chan.is_closing():
                continue  # keep draining so the process is never blocked on a full pipe
            write(data)

    async def _pump_pty(self, master: int) -> None:
        loop = asyncio.get_running_loop()
        readable = asyncio.Event()
        loop.add_reader(master, readable.set)
        try:
            while True:
                await self._writable.wait()
                await readable.wait()
                readable.clear()
                try:
                    data = os.read(master, _CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    return  # EIO: every process holding the terminal has gone
                if not data:
                    return
                if self._chan is not None and not self._chan.is_closing():
                    self._chan.write(data)
        finally:
            loop.remove_reader(master)

    def _drop(self) -> None:
        self.kill()
        self._conn.abort()


def _set_winsize(fd: int, width: int, height: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))


def _find_record(root: Path, agent_id: str, wait: float = 10.0) -> dict[str, Any]:
    # The spawner saves the record when it releases the state lock, which can be after a
    # forked agent (from the zygote, in milliseconds) first looks: look until it is there.
    deadline = time.monotonic() + wait
    while True:
        st = state.load(root)
        for ws in st["workspaces"].values():
            for rec in ws.get("agents", []):
                if rec["id"] == agent_id:
                    found: dict[str, Any] = rec
                    return found
        if time.monotonic() > deadline:
            raise SystemExit(f"fake coder agent: no agent {agent_id} in {root}")
        time.sleep(0.01)


async def _serve(root: Path, agent_id: str) -> None:
    record = _find_record(root, agent_id)
    ctx = AgentContext(root, agent_id, record)
    host_key = asyncssh.read_private_key(root / "agent_host_key")
    final = Path(record["socket"])
    staging = final.with_name(final.name + ".tmp")
    with contextlib.suppress(FileNotFoundError):
        staging.unlink()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(staging))
    os.chmod(staging, 0o600)
    listener.listen(64)
    server = await asyncssh.listen(
        sock=listener,
        server_factory=lambda: AgentServer(ctx),
        server_host_keys=[host_key],
        encoding=None,
        allow_scp=False,
        server_version="Go",  # the real agent's x/crypto/ssh server identifies as SSH-2.0-Go
        keepalive_interval=0,
    )
    os.replace(staging, final)  # the socket appears atomically: "connected" from now on
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, stop.set)
    watchdog = asyncio.ensure_future(_watch_state(root, agent_id, stop))
    await stop.wait()
    watchdog.cancel()
    for session in list(ctx.sessions):
        session.kill()
    server.close()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(final)


_WATCH_INTERVAL = 2.0


def _still_wanted(root: Path, agent_id: str) -> bool:
    """Does the deployment still know this agent as this process?"""
    try:
        st = state.load(root)
    except (state.StateMissingError, OSError, ValueError):
        return False
    return any(
        rec["id"] == agent_id and rec.get("pid") in (None, os.getpid())
        for ws in st["workspaces"].values()
        for rec in ws.get("agents", [])
    )


async def _watch_state(root: Path, agent_id: str, stop: asyncio.Event) -> None:
    """Exit on our own when the deployment forgot us (its directory removed without
    shutdown(), the workspace stopped by a process that could not kill us): no orphan lives on."""
    while not stop.is_set():
        await asyncio.sleep(_WATCH_INTERVAL)
        if not _still_wanted(root, agent_id):
            stop.set()


def serve(root: Path, agent_id: str) -> None:
    """Run the agent until SIGTERM (called in the daemonised process)."""
    asyncio.run(_serve(root, agent_id))
