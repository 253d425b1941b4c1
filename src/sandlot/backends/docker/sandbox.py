"""A sandbox that is one Docker container; each command is one `docker exec`.

Killing the `docker exec` client does not stop the process inside the container, so every
command announces its pid first (`SpawnSpec.shell_line(announce_pid=True)`). `docker exec`
starts each process as the leader of a new session (runc calls setsid), so that pid is also the
command's process group, and a timeout or kill runs `kill -KILL -<pid>` inside the container:
the whole tree goes, not just the client.

Environment values travel as `-e NAME` flags whose values the client takes from its own
environment, so they never appear on a host command line; only names the client itself reads
(DOCKER_*, HOME, PATH, proxies...) are exported by the shell line instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.abc

from ... import _run_marks, _shell
from ..._host_io import feed_stdin, stop_feeding
from ..._shared_call import SharedCall
from ...errors import CleanupError, ProviderError, SandboxGoneError, SandboxPausedError
from ...sandbox import SWEEP_TIMEOUT, InteractiveSpec, RunningCommand, Sandbox, SpawnSpec
from . import helper
from .cli import PROVIDER, DockerCLI
from .handover import Handover, remove_dir
from .options import DockerOptions, OnClose

T = TypeVar("T")

CHUNK = 64 << 10
#: After a kill, how long to wait for the client to notice before ending it ourselves.
DRAIN_AFTER_KILL = 5.0
#: How long a kill waits for a just-started command to announce its pid.
ANNOUNCE_WAIT = 3.0
#: Bytes of client error text kept when a command never started.
_CLIENT_ERR_LIMIT = 16 << 10

# Variables the docker client reads itself: passing them through its environment would change
# which engine or configuration the client uses, so these are exported inside instead.
_CLIENT_OWN = re.compile(
    r"(DOCKER_.*|HOME|PATH|TMPDIR|XDG_.*|SSH_AUTH_SOCK|(?i:(http|https|no|all)_proxy))\Z"
)

# The client's own last words when it (not the command) failed mid-way.
_CLIENT_FAILURE = re.compile(
    rb"(Error response from daemon|error during connect|Cannot connect to the Docker daemon"
    rb"|unexpected EOF)[^\n]*\n?\Z"
)


def split_env(env: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """(variables passed as `-e NAME` through the client's environment, variables exported)."""
    passed = {k: v for k, v in env.items() if not _CLIENT_OWN.match(k)}
    exported = {k: v for k, v in env.items() if k not in passed}
    return passed, exported


class PidAnnouncement:
    """Splits a command's stderr into the pid line the shell prints first and the rest.

    Anything on stderr that does not start with the marker came from the docker client, which
    failed before the shell ran: it is kept apart (bounded) as `client_error`, never passed on.
    """

    def __init__(self) -> None:
        self.pid: int | None = None
        self.client_error: bytearray | None = None
        self._head = bytearray()

    @property
    def pending(self) -> bytes:
        """What arrived before the pid line was complete (for an error message)."""
        return bytes(self.client_error if self.client_error is not None else self._head)

    def feed(self, chunk: bytes) -> bytes:
        """Take a stderr chunk; return the part that is the command's own stderr."""
        if self.pid is not None:
            return chunk
        if self.client_error is not None:
            if len(self.client_error) < _CLIENT_ERR_LIMIT:
                self.client_error += chunk
            return b""
        self._head += chunk
        marker = _shell.PID_MARKER
        n = min(len(self._head), len(marker))
        if self._head[:n] != marker[:n]:
            self.client_error = self._head
            return b""
        line, sep, rest = bytes(self._head).partition(b"\n")
        if not sep:
            return b""
        digits = line[len(marker) :]
        if not digits.isdigit():
            self.client_error = self._head
            return b""
        self.pid = int(digits)
        self._head = bytearray()
        return rest


async def _read_to_end(reader: asyncio.StreamReader | None) -> None:
    if reader is not None:
        while await reader.read(CHUNK):
            pass


class DockerCommand(RunningCommand):
    """One `docker exec` client process and the command it runs inside the container."""

    def __init__(
        self, sandbox: DockerSandbox, proc: asyncio.subprocess.Process, spec: SpawnSpec
    ) -> None:
        self._sandbox = sandbox
        self._proc = proc
        self._spec = spec
        self._announcement = PidAnnouncement()
        self._announced = asyncio.Event()
        self._killed = False
        self._signalled = False  # the group kill was sent (signal_group)
        self._tail = bytearray()  # last bytes of stderr, to spot a client failure at the end
        self._tasks = [
            asyncio.ensure_future(self._pump_out()),
            asyncio.ensure_future(self._pump_err()),
        ]
        self._feeder: asyncio.Future[None] | None = None
        if proc.stdin is not None:
            self._feeder = asyncio.ensure_future(feed_stdin(proc.stdin, spec.stdin))
        self._done = asyncio.ensure_future(self._finish())

    # ---- streams ------------------------------------------------------------------------

    async def _pump_out(self) -> None:
        assert self._proc.stdout is not None
        while chunk := await self._proc.stdout.read(CHUNK):
            await self._spec.stdout(chunk)

    @property
    def pid(self) -> int | None:
        """The command's pid (and process group) inside the container, once announced."""
        return self._announcement.pid

    async def _pump_err(self) -> None:
        assert self._proc.stderr is not None
        while chunk := await self._proc.stderr.read(CHUNK):
            own = self._announcement.feed(chunk)
            if self._announcement.pid is not None:
                self._announced.set()
            if own:
                self._tail = (self._tail + own)[-512:]
                await self._spec.stderr(own)

    # ---- ending ---------------------------------------------------------------------------

    async def _finish(self) -> int:
        try:
            code = await self._sandbox.while_alive(self._proc.wait(),
                                                   f"docker exec {self._spec.display!r}")
        except ProviderError:
            # The container froze under the command: the client would wait for as long as it
            # stays frozen. End the client; the command itself stays frozen with the container.
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            for task in self._tasks:
                task.cancel()
            if self._feeder is not None:
                self._feeder.cancel()
            self._announced.set()
            raise
        await stop_feeding(self._feeder)  # the command is gone
        try:
            await asyncio.gather(*self._tasks)
        except asyncio.CancelledError:
            if not self._killed:
                raise
        self._announced.set()  # nobody waits for a pid that will never come
        if self.pid is None and not self._killed:
            what = f"docker exec {self._spec.display!r}"
            text = self._announcement.pending.decode(errors="replace")
            error = self._sandbox.cli.error(
                text, what=what, container=self._sandbox.name, fallback=ProviderError
            )
            if type(error) is ProviderError:
                # Nothing recognisable (a client cut off mid-start says nothing): ask the
                # engine whether the container itself went away.
                await self._sandbox.ensure_running(what)
            raise error
        if code != 0 and not self._killed and (code >= 126 or _CLIENT_FAILURE.search(self._tail)):
            # Exit codes the client uses for its own failures, and signals: was it the
            # command, or did the container (or the engine) go away under it?
            await self._sandbox.ensure_running(f"docker exec {self._spec.display!r}",
                                               killed=code == 128 + 9)
        return code

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def signal_group(self) -> None:
        self._killed = True
        if self._done.done() or self._signalled:
            return
        self._signalled = True
        if self.pid is None:
            waiter = asyncio.ensure_future(self._announced.wait())
            await asyncio.wait([waiter, self._done], timeout=ANNOUNCE_WAIT,
                               return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
        if self.pid is not None and not self._done.done():
            # Bounded: the engine can hold a new exec while it cannot deliver the output of
            # others (four relays whose host readers stalled: kills took 1, 7, 30 and 30 s,
            # each freed as another client ended). The client is ended below either way.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    self._sandbox.kill_group(self.pid, self._spec.env.get(_run_marks.RUN_ENV)),
                    DRAIN_AFTER_KILL)

    async def kill(self) -> None:
        self._killed = True
        if self._done.done():
            return
        await self.signal_group()
        try:
            await asyncio.wait_for(asyncio.shield(self._done), DRAIN_AFTER_KILL)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
            try:
                await asyncio.wait_for(asyncio.shield(self._done), DRAIN_AFTER_KILL)
            except TimeoutError:
                for task in self._tasks:
                    task.cancel()
                if self._feeder is not None:
                    self._feeder.cancel()
                # A sink never returned. What is left in the pipes is read to its end (the
                # client is gone, so the end comes): a pipe left full is never closed, and
                # the client's wait() waits for its pipes.
                await asyncio.wait(self._tasks, timeout=DRAIN_AFTER_KILL)
                self._tasks = [asyncio.ensure_future(_read_to_end(reader))
                               for reader in (self._proc.stdout, self._proc.stderr)]
            except Exception:
                pass  # reported by wait()
        except Exception:
            pass  # reported by wait()


class DockerSandbox(Sandbox):
    """A running container with a worktree; commands are `docker exec` calls."""

    def __init__(
        self,
        cli: DockerCLI,
        *,
        container_id: str,
        name: str,
        options: DockerOptions,
        on_close: OnClose,
        handover_dir: Path | None = None,
    ) -> None:
        super().__init__(provider=PROVIDER, worktree=options.workdir, name=name)
        self.cli = cli
        self.container_id = container_id
        self.options = options
        self.secrets.add_env(options.env)
        self._session_helper = options.session_helper
        self.on_close: OnClose = on_close
        self._root: bool | None = None  # whether commands run as root (asked once)
        #: The container's state, one `docker inspect` shared by every command that asks.
        self._state = SharedCall(self._inspect_state)
        self._paused_since: float | None = None
        #: Forwarded sockets handed into the container (adr/0055); None without its mount.
        self.handover = None if handover_dir is None else Handover(handover_dir)

    def _exec_argv(
        self, argv: list[str], *, cwd: str, env: dict[str, str], sudo: bool, interactive: bool,
        tty: bool, announce: bool,
    ) -> tuple[list[str], dict[str, str]]:
        passed, exported = split_env(env)
        line = _shell.render(argv, cwd=cwd, env=exported, sudo=sudo, announce_pid=announce)
        flags: list[str] = []
        if interactive:
            flags.append("-i")
        if tty:
            flags.append("-t")
        if self.options.user:
            flags += ["-u", self.options.user]
        for key in passed:
            flags += ["-e", key]
        client_env = {**self.cli.env, **passed}
        return self.cli.argv("exec", *flags, self.container_id, "sh", "-c", line), client_env

    def _helper_on(self) -> bool:
        """Whether commands and forwards may go over the session helper (adr/0043)."""
        return self._session_helper

    async def _spawn(self, spec: SpawnSpec) -> RunningCommand:
        """Over the session helper when it runs (one request on its stream), else (and for
        the helper's own start) one `docker exec` (adr/0043)."""
        if self._helper_on() and not helper.is_helper_start(spec):
            command = await helper.spawn(self, spec)
            if command is not None:
                return command
        cmd, env = self._exec_argv(
            spec.argv, cwd=spec.cwd, env=spec.env, sudo=spec.sudo,
            interactive=spec.stdin is not None, tty=False, announce=True,
        )  # fmt: skip
        proc = await asyncio.create_subprocess_exec(
            *cmd,
            stdin=asyncio.subprocess.PIPE if spec.stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,  # a Ctrl-C meant for the caller is not the client's
        )
        return DockerCommand(self, proc, spec)

    async def _interactive(self, spec: InteractiveSpec) -> int:
        from ..._host_io import run_piped as _run_piped
        from ..._host_io import run_with_pty as _run_with_pty

        cmd, client_env = self._exec_argv(
            spec.argv, cwd=spec.cwd, env=spec.env, sudo=False, interactive=True, tty=spec.tty,
            announce=False,
        )
        if spec.tty:
            # `docker exec -t` insists on a terminal as its stdin: give it a local PTY.
            return await asyncio.to_thread(
                _run_with_pty, cmd, client_env, spec.stdin, spec.stdout
            )
        return await asyncio.to_thread(
            _run_piped, cmd, client_env, spec.stdin, spec.stdout, spec.stderr
        )

    async def _forward_handover(
        self, client: socket.socket, remote_host: str, remote_port: int
    ) -> bool:
        """The client socket itself, handed to the session helper (adr/0055), when the
        container has the handover mount and the helper runs."""
        if not self._helper_on() or self.handover is None:
            return False
        return await self.handover.carry(helper.session_of(self), client, remote_host,
                                         remote_port)

    async def _forward_connection(
        self, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
    ) -> None:
        """A `connect` request on the session helper when it runs, else a relay command."""
        if self._helper_on() and await helper.forward(self, client, remote_host, remote_port):
            return
        await super()._forward_connection(client, remote_host, remote_port)

    async def _copy_in(self, source: Path, dest: str) -> None:
        """Large payloads go through `docker cp -` when commands run as root (see copy.py);
        everything else through the shared tar-over-exec path. Same contract either way."""
        from .copy import copy_in, worth_docker_cp

        big = await anyio.to_thread.run_sync(worth_docker_cp, source)
        if big and await self._runs_as_root():
            await copy_in(self, source, dest)
            return
        await super()._copy_in(source, dest)

    async def _runs_as_root(self) -> bool:
        if self._root is None:
            result = await self.exec(["id", "-u"], timeout=60)
            self._root = result.exit_code == 0 and result.stdout.strip() == "0"
        return self._root

    async def _copy_out(self, source: str, host: Path) -> None:
        """Streams `docker cp` straight into a host tar (see copy.py); same contract as the base."""
        if not source.strip("/"):
            await super()._copy_out(source, host)  # the whole root: the generic path
            return
        from .copy import copy_out

        await copy_out(self, source, host)

    async def kill_group(self, pid: int, mark: str | None = None) -> None:
        """SIGKILL the process group `pid` inside the container (as root: sudo'd commands too),
        then, in the same exec, every process holding `mark`.

        One exec, not two: once the group is dead the engine holds the container's next exec
        for as long as a process that left the group keeps the command's output open (4 s
        measured with a `setsid` child), so the sweep that ends that process must already be
        running by then."""
        sweep = _run_marks.sweep_argv(mark) if mark is not None else []
        await self.cli.run(
            "exec", "-u", "0", self.container_id,
            "sh", "-c", 'kill -KILL -"$1"; shift; [ "$#" -eq 0 ] || exec "$@"', "sh", str(pid),
            *sweep, timeout=30,
        )  # fmt: skip

    async def _sweep(self, mark: str) -> None:
        """As root, so processes a command started through sudo are found too."""
        await self.cli.run(
            "exec", "-u", "0", self.container_id, *_run_marks.sweep_argv(mark),
            timeout=SWEEP_TIMEOUT,
        )  # fmt: skip

    async def _inspect_state(self) -> str:
        done = await self.cli.run(
            "container", "inspect", "--format", "{{.State.Status}}", self.container_id,
            timeout=30,
        )  # fmt: skip
        return done.stdout.strip() if done.code == 0 else ""

    async def while_alive(self, waiting: Awaitable[T], what: str) -> T:
        """Await `waiting`, checking the container every `keepalive_interval` seconds: one
        that stays paused raises `SandboxPausedError`, one that stopped `SandboxGoneError`."""
        interval = self.options.keepalive_interval
        task = asyncio.ensure_future(waiting)
        try:
            while True:
                done, _ = await asyncio.wait([task], timeout=interval)
                if done:
                    return task.result()
                state = await self._state()
                if state == "running":
                    self._paused_since = None
                elif state == "paused":
                    now = time.monotonic()
                    if self._paused_since is None:
                        self._paused_since = now
                    elif now - self._paused_since >= interval * self.options.keepalive_count_max:
                        raise SandboxPausedError(
                            f"{what}: container {self.name!r} has been paused for "
                            f"{now - self._paused_since:.0f}s (docker pause); its commands "
                            "stay frozen until it is unpaused, then the next call works",
                            provider=PROVIDER, sandbox=self.name,
                        )  # fmt: skip
                else:
                    await self.ensure_running(what)
        finally:
            if not task.done():
                task.cancel()

    async def ensure_running(self, what: str, *, killed: bool = False) -> None:
        """Raise `SandboxGoneError` / `BackendUnavailableError` unless the container runs.

        `killed`: a command just died of SIGKILL. A `docker rm -f` kills the container's
        init, and with it every process of the container, before the engine marks the
        container stopped: the inspect below can still say running. An exec that starts
        tells the two apart (none starts in a container whose init is dead), and stands for
        every later call, which would fail the same way."""
        if killed and await self._state() == "running":
            probe = await self.cli.run("exec", self.container_id, "true", timeout=30)
            if probe.code == 0:
                return  # killed inside a live container: the command's own exit
            raise self.cli.error(
                probe.stderr or "the container's processes ended", what=what,
                container=self.name, fallback=SandboxGoneError,
            )  # fmt: skip
        done = await self.cli.run(
            "container", "inspect", "--format", "{{.State.Running}}", self.container_id,
            timeout=30,
        )  # fmt: skip
        if done.code != 0:
            raise self.cli.error(
                done.stderr or "no such container", what=what, container=self.name,
                fallback=SandboxGoneError,
            )  # fmt: skip
        if done.stdout.strip() != "true":
            raise SandboxGoneError(
                f"{what}: container {self.name!r} stopped while the command ran (killed or "
                "stopped from outside); create a new sandbox",
                provider=PROVIDER, sandbox=self.name,
            )  # fmt: skip

    _resume_before_close = True  # a paused container's processes end as usual, then it goes

    async def _pause(self) -> None:
        await self.cli.check("pause", self.container_id, what="docker pause",
                             container=self.name)

    async def _resume(self) -> None:
        await self.cli.check("unpause", self.container_id, what="docker unpause",
                             container=self.name)

    async def _close(self) -> None:
        if self.handover is not None:
            await self.handover.close()
        await apply_on_close(self.cli, self.container_id, self.name, self.on_close)
        if self.handover is not None and self.on_close == "delete":
            remove_dir(self.handover.folder)


async def apply_on_close(cli: DockerCLI, container: str, name: str, policy: OnClose) -> None:
    """Delete, stop or leave the container; a container already gone counts as done."""
    if policy == "leave":
        return
    if policy == "delete":
        args = ["rm", "-f", "-v", container]
    else:
        args = ["stop", "--time", "5", container]
    try:
        done = await cli.run(*args, timeout=120)
    except Exception as exc:
        raise CleanupError(
            f"on_close={policy}: could not run docker for container {name!r}: {exc}; remove it "
            "later with `sandlot gc`",
            provider=PROVIDER, sandbox=name,
        ) from exc  # fmt: skip
    if done.code == 0 or "no such container" in done.stderr.lower():
        return
    if policy == "stop" and cli.is_gone(done.stderr):
        return
    reach = "; the engine is unreachable" if cli.is_unreachable(done.stderr) else ""
    raise CleanupError(
        f"on_close={policy}: `docker {' '.join(args[:-1])}` failed for container {name!r}"
        f"{reach}: {done.stderr.strip()}. It is labelled sandlot.managed: `sandlot gc` removes "
        "it once the engine answers",
        provider=PROVIDER, sandbox=name,
    )  # fmt: skip
