"""SSH transport for remote backends: ONE asyncssh connection, every command a channel on it.

The connection runs over a proxy command (for Coder: `coder ssh --stdio <ws>.<agent>`) that we
start ourselves on one end of a socketpair, as OpenSSH does with ProxyCommand. Doing it here
rather than with asyncssh's `proxy_command=` lets the child get its own environment (the Coder
session token goes to that child only) and lets us keep its stderr, which is where the proxy
says why it failed ("agent is shutting down", "not logged in").

Nothing of the user's SSH setup is read or written: no ~/.ssh/config, known_hosts, keys,
ssh-agent or certificates (every such asyncssh option is passed explicitly). Host keys are not
checked, because the proxy is what authenticates the peer (see adr/ on the single connection).

A command is one shell line with a PID announcement (`SpawnSpec.shell_line(announce_pid=True)`)
run as an exec channel: stdout/stderr stream to the spec's sinks, stdin is sent then EOF, and
`kill()` runs `kill -KILL -- -<pid>` over the same connection so the whole process group ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import threading
from collections.abc import AsyncIterable, Callable
from dataclasses import dataclass, field
from typing import IO, Any, BinaryIO

import anyio
import anyio.abc
import asyncssh

from ... import _shell
from ...errors import ConnectionLostError, ProviderError, redact
from ...errors import SSHConnectError as SSHConnectError  # its home until errors.py
from ...output import OutputCapture
from ...sandbox import RunningCommand, SpawnSpec

log = logging.getLogger("sandlot.ssh")


class _MaskCommandEnv(logging.Filter):
    """asyncssh logs each command line at INFO; env values (maybe secrets) must not appear."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and record.args and "Command" in str(record.msg):
            record.args = tuple(
                _shell.mask_env_values(a) if isinstance(a, str) else a for a in record.args
            )
        return True


logging.getLogger("asyncssh").addFilter(_MaskCommandEnv())

CHUNK = 64 << 10
#: After a kill, how long to wait for the exit status before closing the channel ourselves.
KILL_GRACE = 5.0
#: How long `kill()` waits for the PID announcement of a command that has just started.
PID_WAIT = 5.0
_PROXY_STDERR_KEEP = 16 << 10
_STDIN_DONE = object()
_CIPHERS = [
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
]


@dataclass
class ProxyCommand:
    """A child process whose stdin/stdout carry the SSH byte stream."""

    argv: list[str]
    env: dict[str, str] | None = None
    label: str = ""

    async def start(self) -> ProxyProcess:
        ours, theirs = socket.socketpair()
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=asyncio.subprocess.PIPE,
                env=self.env,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return ProxyProcess(proc, ours, self.label)


class ProxyProcess:
    """A running proxy: its socket end, and the tail of what it printed on stderr."""

    def __init__(self, proc: asyncio.subprocess.Process, sock: socket.socket, label: str) -> None:
        self.proc = proc
        self.sock = sock
        self.label = label
        self._stderr = OutputCapture(_PROXY_STDERR_KEEP, self._log_line)
        self._stderr_task = asyncio.ensure_future(self._read_stderr())

    def _log_line(self, line: str) -> None:
        if line.strip():
            log.debug("proxy %s: %s", self.label, redact(line))

    async def _read_stderr(self) -> None:
        stream = self.proc.stderr
        assert stream is not None
        while chunk := await stream.read(CHUNK):
            self._stderr.feed(chunk)
        self._stderr.close()

    async def stderr_text(self, wait: float = 0.0) -> str:
        """What the proxy printed; waits up to `wait` seconds for it to finish printing."""
        if wait:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._stderr_task), wait)
        return self._stderr.text()

    @property
    def exited(self) -> bool:
        return self.proc.returncode is not None

    async def stop(self) -> None:
        """End the proxy (and anything it started) and release its socket."""
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), 3)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                await self.proc.wait()
        with contextlib.suppress(asyncio.TimeoutError, Exception):
            await asyncio.wait_for(asyncio.shield(self._stderr_task), 2)
        self._stderr_task.cancel()
        self.sock.close()


class _Client(asyncssh.SSHClient):
    """Notes when the connection goes away, so the next call reconnects."""

    def __init__(self, on_lost: Callable[[Exception | None], None]) -> None:
        self._on_lost = on_lost

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(exc)

    def auth_banner_received(self, msg: str, lang: str) -> None:
        log.debug("ssh banner: %s", msg.strip())


@dataclass
class SSHOptions:
    """How to reach the SSH server behind the proxy."""

    username: str = "sandlot"
    connect_timeout: float = 30.0
    keepalive_interval: float = 15.0
    keepalive_count_max: int = 4
    #: Largest SSH packet we accept (bigger packets: fewer per-packet costs on bulk output).
    max_packet: int = 256 << 10
    provider: str = ""
    sandbox: str = ""
    #: Extra `asyncssh.connect` keyword arguments (e.g. ciphers for a benchmark).
    extra: dict[str, Any] = field(default_factory=dict)


class SSHConnection:
    """One SSH connection over a proxy command, reopened on the next call after a drop."""

    def __init__(self, proxy: ProxyCommand, options: SSHOptions | None = None) -> None:
        self.proxy = proxy
        self.options = options or SSHOptions()
        self._conn: asyncssh.SSHClientConnection | None = None
        self._proxy_proc: ProxyProcess | None = None
        self._lost: Exception | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        #: Set once a drop was seen: the next `ensure()` reconnects (and says so in the log).
        self.reconnects = 0
        #: True when the remote shell's `$$` leads its own process group (checked at connect).
        self.group_kill = True
        #: Wrap commands in `setsid` (the server's shell leads no process group, setsid exists).
        self.wrap_setsid = False
        #: The server sends `exit-signal` for a command killed by a signal (see command_line).
        self.reports_signals = True

    # ---- connecting ---------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._conn is not None and self._lost is None

    def _error(self, message: str, proxy_stderr: str = "") -> SSHConnectError:
        return SSHConnectError(
            message,
            proxy_stderr=proxy_stderr,
            provider=self.options.provider,
            sandbox=self.options.sandbox,
        )

    async def _open(self) -> asyncssh.SSHClientConnection:
        proxy = await self.proxy.start()
        lost: list[Exception | None] = []

        def on_lost(exc: Exception | None) -> None:
            lost.append(exc)
            if self._conn is conn_ref[0]:
                self._lost = exc or ConnectionResetError("connection closed")

        conn_ref: list[asyncssh.SSHClientConnection | None] = [None]
        opts = self.options
        try:
            conn = await asyncio.wait_for(
                asyncssh.connect(
                    host=self.proxy.label or "sandbox",
                    sock=proxy.sock,
                    client_factory=lambda: _Client(on_lost),
                    username=opts.username,
                    # Nothing of the user's SSH setup is consulted (see the module docstring).
                    config=None,
                    known_hosts=None,
                    client_keys=None,
                    agent_path=None,
                    agent_forwarding=False,
                    x509_trusted_certs=None,
                    x509_trusted_cert_paths=[],
                    password=None,
                    gss_auth=False,
                    gss_kex=False,
                    kbdint_auth=False,
                    host_based_auth=False,
                    pkcs11_provider=None,
                    compression_algs=None,
                    # AES-GCM first: the fastest cipher asyncssh has (via `cryptography`); the
                    # rest keep any server (OpenSSH, Go's x/crypto/ssh in coder's agent) happy.
                    encryption_algs=_CIPHERS,
                    max_pktsize=opts.max_packet,
                    keepalive_interval=opts.keepalive_interval,
                    keepalive_count_max=opts.keepalive_count_max,
                    login_timeout=opts.connect_timeout,
                    **opts.extra,
                ),
                opts.connect_timeout,
            )
        except (TimeoutError, OSError, asyncssh.Error, EOFError) as exc:
            stderr = await proxy.stderr_text(wait=2.0)
            await proxy.stop()
            what = (
                "timed out" if isinstance(exc, asyncio.TimeoutError)
                else f"{type(exc).__name__}: {exc}"
            )
            raise self._error(
                f"cannot open an SSH connection through `{_shell.display(self.proxy.argv)}` "
                f"({what})",
                stderr,
            ) from None
        except BaseException:
            await proxy.stop()
            raise
        conn_ref[0] = conn
        if lost:  # dropped before we even looked
            conn.abort()
            await proxy.stop()
            raise self._error("the SSH connection closed right after it opened",
                              await proxy.stderr_text(wait=1.0))
        self._proxy_proc = proxy
        return conn

    async def connect(self) -> None:
        """Open the connection now (else the first command does)."""
        await self.ensure()

    async def ensure(self) -> asyncssh.SSHClientConnection:
        """The live connection; reconnects once after a drop (raising `SSHConnectError`)."""
        if self._closed:
            raise ConnectionLostError(
                "the SSH connection was closed", provider=self.options.provider,
                sandbox=self.options.sandbox,
            )
        conn = self._conn
        if conn is not None and self._lost is None:
            return conn
        async with self._lock:
            if self._conn is not None and self._lost is None:
                return self._conn
            if self._conn is not None:
                self.reconnects += 1
                log.info("ssh %s: connection lost (%s); reconnecting", self.proxy.label,
                         self._lost)
                await self._drop()
            self._conn = await self._open()
            self._lost = None
            return self._conn

    async def _drop(self) -> None:
        conn, proxy = self._conn, self._proxy_proc
        self._conn = None
        self._proxy_proc = None
        if conn is not None:
            conn.abort()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(conn.wait_closed(), 2)
        if proxy is not None:
            await proxy.stop()

    async def proxy_stderr(self) -> str:
        return await self._proxy_proc.stderr_text() if self._proxy_proc else ""

    async def suspend(self) -> None:
        """Drop the connection but keep it usable: the next call connects again (the
        workspace was stopped and will be started)."""
        async with self._lock:
            await self._drop()

    async def close(self) -> None:
        """Close the connection and end the proxy. Idempotent."""
        self._closed = True
        async with self._lock:
            await self._drop()

    def lost_error(self, what: str) -> ConnectionLostError:
        reason = f": {self._lost}" if self._lost else ""
        return ConnectionLostError(
            f"the SSH connection to {self.proxy.label} dropped while {what}{reason}; the next "
            "call reconnects",
            provider=self.options.provider,
            sandbox=self.options.sandbox,
        )

    # ---- commands ---------------------------------------------------------------------------

    async def run(
        self, line: str, *, stdin: bytes | None = None, timeout: float | None = 60.0
    ) -> tuple[int, bytes, bytes]:
        """Run a shell line to completion: (exit code, stdout, stderr). For small helpers."""
        out, err = bytearray(), bytearray()

        async def to_out(data: bytes) -> None:
            out.extend(data)

        async def to_err(data: bytes) -> None:
            err.extend(data)

        running = await self.exec_line(line, stdin=stdin, stdout=to_out, stderr=to_err)
        try:
            code = await asyncio.wait_for(running.wait(), timeout)
        except BaseException:
            with contextlib.suppress(Exception):
                await asyncio.shield(running.kill())
            raise
        return code, bytes(out), bytes(err)

    async def exec_line(
        self,
        line: str,
        *,
        stdin: bytes | AsyncIterable[bytes] | None,
        stdout: Callable[[bytes], Any],
        stderr: Callable[[bytes], Any],
        announce_pid: bool = False,
        send_eof: bool = True,
    ) -> SSHCommand:
        """Start `line` as an exec channel; stdout/stderr go to the async sinks. Without
        `send_eof`, no stdin is sent at all (the line must not read the channel's stdin)."""
        conn = await self.ensure()
        try:
            process = await conn.create_process(line, encoding=None)
        except (asyncssh.ChannelOpenError, asyncssh.Error, OSError) as exc:
            if not self.connected:
                raise self.lost_error("starting a command") from exc
            raise ProviderError(
                f"the SSH server refused to start a command: {exc}",
                provider=self.options.provider, sandbox=self.options.sandbox,
            ) from exc
        return SSHCommand(self, process, stdin, stdout, stderr, announce_pid=announce_pid,
                          send_eof=send_eof)

    def command_line(self, spec: SpawnSpec) -> str:
        """The line an exec channel runs for `spec`, shaped by what the server was seen to do.

        - If the server reports no exit signal (coder's agent sends status 255 for a command
          killed by a signal, like OpenSSH), the command runs in a subshell so its shell
          reports `128 + signal` as a normal exit status. `$$` is still the outer shell, the
          group leader. (The shell then prints its own "Killed" notice on stderr.)
        - If the server's shell does not lead its own process group, `setsid` makes it.
        """
        # In the subshell below, an evaluated string's `$$` would be the outer shell's.
        line = spec.shell_line(announce_pid=True, inline=self.reports_signals)
        if spec.stdin is None:
            # Nothing to send: the command reads /dev/null, so the channel needs no EOF packet
            # (one packet less per command; measured 0.25 ms on the real Coder tier).
            line = f"exec </dev/null; {line}"
        if not self.reports_signals:
            # `; exit $?` keeps the subshell from being the last command, which some shells
            # (dash) would run without a fork.
            line = f"( {line} ); exit $?"
        if self.wrap_setsid:
            line = f"exec setsid sh -c {_shell.quote(line)}"
        return line

    async def spawn(self, spec: SpawnSpec) -> SSHCommand:
        """A `Sandbox._spawn` for SSH backends: the spec's shell line, killable as a group."""
        return await self.exec_line(
            self.command_line(spec),
            stdin=spec.stdin, stdout=spec.stdout, stderr=spec.stderr, announce_pid=True,
            send_eof=spec.stdin is not None,
        )

    async def check_exit_signals(self) -> bool:
        """Whether the server reports a signal death as `exit-signal` (sets `reports_signals`).

        One round trip: a shell that kills itself with SIGKILL.
        """
        conn = await self.ensure()
        process = await conn.create_process("kill -9 $$", encoding=None, stdin=asyncssh.DEVNULL)
        await process.wait_closed()
        self.reports_signals = process.exit_signal is not None
        return self.reports_signals

    async def kill_group(self, pid: int) -> None:
        """SIGKILL the process group `pid` leads (or the process, if it leads none)."""
        # `kill -9 -<pid>`, not `kill -KILL -- -<pid>`: dash (Debian's sh) takes `--` for a
        # pid and fails with "Illegal number"; this spelling works in dash, bash and busybox.
        target = f"-{pid}" if self.group_kill else str(pid)
        with contextlib.suppress(Exception):
            await self.run(f"kill -9 {target} 2>/dev/null", timeout=10)

    async def interactive(
        self,
        line: str,
        *,
        stdin: BinaryIO,
        stdout: BinaryIO,
        stderr: BinaryIO,
        tty: bool,
    ) -> int:
        """Run `line` wired to host streams; with a PTY (stdout and stderr merged) when `tty`."""
        conn = await self.ensure()
        term: dict[str, Any] = {}
        restore: Callable[[], None] | None = None
        if tty:
            term = {"term_type": os.environ.get("TERM", "xterm"), "term_size": _term_size(stdin)}
            restore = _raw_mode(stdin)
        try:
            process = await conn.create_process(line, encoding=None, **term)
        except (asyncssh.Error, OSError) as exc:
            if restore:
                restore()
            if not self.connected:
                raise self.lost_error("starting an interactive command") from exc
            raise
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | object] = asyncio.Queue(maxsize=16)

        def reader() -> None:
            # A daemon thread: a blocking read of a terminal must not keep the program alive.
            try:
                while True:
                    chunk = _read_some(stdin)
                    if not chunk:
                        break
                    asyncio.run_coroutine_threadsafe(queue.put(chunk), loop).result()
            except (OSError, ValueError, RuntimeError):
                pass
            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(queue.put(_STDIN_DONE), loop)

        async def feed() -> None:
            try:
                while True:
                    chunk = await queue.get()
                    if chunk is _STDIN_DONE:
                        break
                    assert isinstance(chunk, bytes)
                    process.stdin.write(chunk)
                    await process.stdin.drain()
                process.stdin.write_eof()
            except (asyncssh.Error, OSError, BrokenPipeError):
                pass

        async def pump(stream: asyncssh.SSHReader[bytes], dest: IO[bytes]) -> None:
            while chunk := await stream.read(CHUNK):
                await asyncio.to_thread(_write_flush, dest, chunk)

        threading.Thread(target=reader, daemon=True, name="sandlot-ssh-stdin").start()
        feeder = asyncio.ensure_future(feed())
        try:
            await asyncio.gather(pump(process.stdout, stdout), pump(process.stderr, stderr))
            await process.wait_closed()
        except (asyncssh.Error, OSError) as exc:
            raise self.lost_error("running an interactive command") from exc
        finally:
            feeder.cancel()
            if restore:
                restore()
            process.close()
        return _exit_code(process.exit_status, process.exit_signal, lost=not self.connected,
                          conn=self)


def _write_flush(dest: IO[bytes], chunk: bytes) -> None:
    dest.write(chunk)
    dest.flush()


def _read_some(stream: BinaryIO) -> bytes:
    read1 = getattr(stream, "read1", None)
    if read1 is not None:
        data: bytes = read1(CHUNK)
        return data
    return stream.read(CHUNK)


def _term_size(stream: BinaryIO) -> tuple[int, int, int, int]:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        size = os.get_terminal_size(stream.fileno())
        return (size.columns, size.lines, 0, 0)
    return (80, 24, 0, 0)


def _raw_mode(stream: BinaryIO) -> Callable[[], None] | None:
    """Put a host terminal in raw mode (the remote PTY does the line editing); undo later."""
    try:
        import termios
        import tty as ttymod

        fd = stream.fileno()
        if not os.isatty(fd):
            return None
        saved = termios.tcgetattr(fd)
        ttymod.setraw(fd)
    except (OSError, ValueError, AttributeError, ImportError):
        return None

    def restore() -> None:
        with contextlib.suppress(Exception):
            termios.tcsetattr(fd, termios.TCSADRAIN, saved)

    return restore


def _exit_code(
    status: int | None,
    signal_info: tuple[str, bool, str, str] | None,
    *,
    lost: bool,
    conn: SSHConnection,
    killed: bool = False,
) -> int:
    if signal_info is not None:
        name = signal_info[0]
        number = getattr(signal, f"SIG{name.upper()}", None)
        return 128 + int(number) if number is not None else 128 + 9
    if killed and (status is None or (status == 255 and not conn.reports_signals)):
        # We ended its process group with SIGKILL; the server had no signal to report.
        return 128 + signal.SIGKILL
    if status is not None and status >= 0:
        return status
    if lost:
        raise conn.lost_error("a command was running")
    # The server closed the channel without an exit status (like OpenSSH's 255).
    return 255


class PidAnnouncement:
    """Takes the `PID_MARKER<pid>\\n` line off the front of a stderr stream.

    The line may arrive split over several reads; anything that does not look like it is
    passed through untouched (a command started without an announcement loses nothing).
    """

    #: Longest announcement line we wait for before deciding there is none.
    LIMIT = 64

    def __init__(self) -> None:
        self.pid: int | None = None
        self.done = False
        self._head = bytearray()

    def feed(self, data: bytes) -> bytes:
        """Bytes of `data` that belong to the stream (not to the announcement)."""
        if self.done:
            return data
        self._head += data
        marker = _shell.PID_MARKER
        prefix = bytes(self._head[: len(marker)])
        if not marker.startswith(prefix):
            return self.finish()
        newline = self._head.find(b"\n")
        if newline < 0:
            return self.finish() if len(self._head) > self.LIMIT else b""
        line, rest = bytes(self._head[:newline]), bytes(self._head[newline + 1 :])
        digits = line[len(marker) :]
        if not digits.isdigit():
            return self.finish()
        self.pid = int(digits)
        self.done = True
        self._head.clear()
        return rest

    def finish(self) -> bytes:
        """No (more) announcement: give back what was held."""
        self.done = True
        data = bytes(self._head)
        self._head.clear()
        return data


class SSHCommand(RunningCommand):
    """One exec channel: streams to the spec's sinks, knows its remote PID, ends its group."""

    def __init__(
        self,
        conn: SSHConnection,
        process: asyncssh.SSHClientProcess[bytes],
        stdin: bytes | AsyncIterable[bytes] | None,
        on_stdout: Callable[[bytes], Any],
        on_stderr: Callable[[bytes], Any],
        *,
        announce_pid: bool,
        send_eof: bool = True,
    ) -> None:
        self._conn = conn
        self._process = process
        self._on_stdout = on_stdout
        self._on_stderr = on_stderr
        self._pid: int | None = None
        self._pid_known = asyncio.Event()
        self._announcement = PidAnnouncement() if announce_pid else None
        self._killed = False
        self._signalled = False  # the group kill was sent (signal_group)
        self._pumps = [
            asyncio.ensure_future(self._pump(process.stdout, self._deliver_out)),
            asyncio.ensure_future(self._pump_stderr()),
        ]
        self._feeder: asyncio.Future[None] | None = (
            asyncio.ensure_future(self._feed(stdin)) if send_eof or stdin is not None else None
        )
        self._done = asyncio.ensure_future(self._finish())

    @property
    def pid(self) -> int | None:
        return self._pid

    async def _deliver_out(self, data: bytes) -> None:
        await self._on_stdout(data)

    async def _deliver_err(self, data: bytes) -> None:
        if self._announcement is not None and not self._announcement.done:
            data = self._announcement.feed(data)
            if self._announcement.done:
                self._pid = self._announcement.pid
                self._pid_known.set()
            if not data:
                return
        await self._on_stderr(data)

    async def _pump(
        self, stream: asyncssh.SSHReader[bytes], deliver: Callable[[bytes], Any]
    ) -> None:
        try:
            while chunk := await stream.read(CHUNK):
                await deliver(chunk)
        except (asyncssh.Error, OSError, asyncio.IncompleteReadError):
            pass  # the connection went away: _finish reports it

    async def _pump_stderr(self) -> None:
        await self._pump(self._process.stderr, self._deliver_err)
        if self._announcement is not None and not self._announcement.done:
            leftover = self._announcement.finish()
            if leftover:
                await self._on_stderr(leftover)
        self._pid_known.set()

    async def _feed(self, source: bytes | AsyncIterable[bytes] | None) -> None:
        writer = self._process.stdin
        try:
            if isinstance(source, bytes | bytearray | memoryview):
                view = memoryview(source)
                for start in range(0, len(view), CHUNK):
                    writer.write(bytes(view[start : start + CHUNK]))
                    await writer.drain()
            elif source is not None:
                async for chunk in source:
                    writer.write(chunk)
                    await writer.drain()
            writer.write_eof()
        except (asyncssh.Error, OSError, BrokenPipeError):
            pass  # the command stopped reading, or the channel closed

    async def _finish(self) -> int:
        process = self._process
        await asyncio.gather(*self._pumps, return_exceptions=True)
        with contextlib.suppress(asyncssh.Error, OSError):
            await process.wait_closed()
        if self._feeder is not None and not self._feeder.done():
            self._feeder.cancel()
        return _exit_code(
            process.exit_status,
            process.exit_signal,
            lost=not self._conn.connected,
            conn=self._conn,
            killed=self._killed,
        )

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def signal_group(self) -> None:
        if self._done.done() or self._signalled:
            return
        self._killed = True
        self._signalled = True
        if self._conn.connected:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._pid_known.wait(), PID_WAIT)
            if self._pid is not None and not self._done.done():
                await self._conn.kill_group(self._pid)

    async def kill(self) -> None:
        if self._done.done():
            return
        await self.signal_group()
        try:
            await asyncio.wait_for(asyncio.shield(self._done), KILL_GRACE)
        except (TimeoutError, ConnectionLostError):
            pass
        except Exception:  # wait() will report it
            pass
        if not self._done.done():
            # No exit status came: close the channel (an agent ends the session's processes
            # when its channel closes) and stop waiting for output.
            self._process.close()
            for task in self._pumps:
                task.cancel()
            with contextlib.suppress(Exception, asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._done), KILL_GRACE)


async def splice_ssh(client: anyio.abc.ByteStream, reader: Any, writer: Any) -> None:
    """Copy both ways between a connection and an SSH direct-tcpip channel (asyncssh's
    SSHReader / SSHWriter of bytes)."""

    async def up() -> None:
        try:
            while True:
                data = await client.receive(CHUNK)
                writer.write(data)
                await writer.drain()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        except Exception:  # the channel went away: the other direction ends too
            return
        with contextlib.suppress(Exception):
            writer.write_eof()

    async with anyio.create_task_group() as group:
        group.start_soon(up)
        try:
            while True:
                data = await reader.read(CHUNK)
                if not data:
                    break
                await client.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            group.cancel_scope.cancel()
            with contextlib.suppress(Exception):
                writer.close()
