"""The local backend: a fresh temp directory on this machine, commands as host subprocesses.

Each command runs in a process group of its own, so a timeout or kill ends the whole tree.
With `isolation="bwrap"`, commands run under bubblewrap: the host file system read-only,
the worktree writable, a private /tmp, no network, a PID namespace that dies with it, and no
capabilities even as root (local_bwrap.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import stat
import sys
import tempfile
from functools import partial
from pathlib import Path
from typing import BinaryIO, Literal

import anyio
import anyio.abc
from pydantic import ConfigDict, Field, TypeAdapter, field_validator, model_validator

from .. import _run_marks, _shell
from .._host_io import feed_stdin, pump, run_piped, run_with_pty, stop_feeding
from .._options import options_from
from .._redacted import RedactedModel
from .._tree import remove_tree
from ..errors import ConfigurationError, SandboxStartError, ToolNotFoundError, TransferError
from ..provider import IsolatedSandboxProvider
from ..sandbox import RunningCommand, Sandbox, SpawnSpec
from .local_bwrap import confinement
from .local_env import check_inherit_env, sandbox_environment
from .local_netns import SharedNetwork

CHUNK = 64 << 10
#: After a kill, how long to wait for the pipes to drain before giving up on them
#: (a daemon that escaped the process group could hold them open forever).
DRAIN_AFTER_KILL = 5.0


class LocalOptions(RedactedModel):
    """Options of the local backend."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["local"] = "local"
    on_close: Literal["delete", "leave"] = "delete"
    """`delete` removes the worktree at close; `leave` keeps it (its path is in the sandbox)."""
    root: str | None = None
    """Host directory under which the temp worktree is made (default: the system temp dir)."""
    attach: str | None = None
    """An existing directory to use as the worktree instead of making one (a sandbox another
    program left with `on_close="leave"`). `on_close` then applies to THAT directory."""
    isolation: Literal["bwrap"] | None = None
    """`bwrap`: run every command under bubblewrap (host read-only, no network)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment for every command, on top of the inherited allowlist (local_env.py)."""
    inherit_env: list[str] = Field(default_factory=list)
    """More host variables to pass on by name; SANDLOT_TOKEN and CODER_SESSION_TOKEN never are."""

    @field_validator("inherit_env")
    @classmethod
    def _check_inherit_env(cls, names: list[str]) -> list[str]:
        return check_inherit_env(names)

    @model_validator(mode="after")
    def _attach_or_root(self) -> LocalOptions:
        if self.attach is not None and self.root is not None:
            raise ValueError("give `root` (make a new worktree under it) or `attach` (use an "
                             "existing directory), not both")
        if self.attach is not None and not os.path.isabs(self.attach):
            raise ValueError("attach must be an absolute path (the sandbox's worktree path)")
        return self

    def build(self) -> LocalProvider:
        return LocalProvider(self)


_ADAPTER: TypeAdapter[LocalOptions] = TypeAdapter(LocalOptions)


def local(
    *,
    on_close: Literal["delete", "leave"] = "delete",
    root: str | None = None,
    isolation: Literal["bwrap"] | None = None,
    env: dict[str, str] | None = None,
    inherit_env: list[str] | None = None,
    attach: str | None = None,
) -> LocalProvider:
    """A provider of local sandboxes (the embedded default: no infrastructure needed).

    Commands get a minimal environment (see `sandlot.backends.local_env`), plus `env`, plus the
    host variables named in `inherit_env`.
    """
    return options_from(_ADAPTER, locals(), what="local options").build()


class LocalProvider(IsolatedSandboxProvider):
    name = "local"

    def __init__(self, options: LocalOptions) -> None:
        self.options = options

    async def create(self) -> LocalSandbox:
        bwrap: str | None = None
        if self.options.isolation == "bwrap":
            bwrap = shutil.which("bwrap")
            if bwrap is None:
                raise ToolNotFoundError(
                    "isolation='bwrap' needs bubblewrap, which is not installed: install it "
                    "(Debian/Ubuntu: apt-get install bubblewrap) or use isolation=None",
                    provider="local",
                )
        if self.options.attach is not None:
            path = os.path.realpath(self.options.attach)
            if not os.path.isdir(path):
                raise ConfigurationError(
                    f"attach: {self.options.attach!r} is not a directory; give the worktree "
                    "path of the sandbox to attach to (sandbox.worktree)"
                )
            return await self._finish(LocalSandbox(path, self.options, bwrap), made=False)
        root = self.options.root
        if root is not None and not os.path.isdir(root):
            raise ConfigurationError(f"local root {root!r} is not a directory; create it first")
        try:
            path = tempfile.mkdtemp(prefix="sandlot-", dir=root)
        except OSError as exc:
            raise SandboxStartError(f"cannot make a worktree: {exc}", provider="local") from exc
        return await self._finish(
            LocalSandbox(os.path.realpath(path), self.options, bwrap), made=True
        )

    @staticmethod
    async def _finish(sandbox: LocalSandbox, *, made: bool) -> LocalSandbox:
        """Start what a bwrap sandbox needs; a creation that fails or is cancelled here takes
        back what it made (the worktree, if it made it, and the network holder)."""
        try:
            if sandbox._bwrap is not None:
                sandbox._confinement = await confinement(sandbox._bwrap)
                sandbox._network = await SharedNetwork.start(sandbox._bwrap)
        except BaseException:
            with anyio.CancelScope(shield=True):
                if sandbox._network is not None:
                    await sandbox._network.stop()
                if made:
                    await asyncio.to_thread(remove_tree, sandbox.worktree)
            raise
        return sandbox


def _copy_file_staged(source: Path, dest: Path, *, out: bool) -> None:
    """Copy one file to exactly `dest` with its mode (and, out of the sandbox, its times, as
    the tar stream would); `dest` appears whole or not at all."""
    what = "copy_out" if out else "copy_in"
    if dest.is_dir() and not dest.is_symlink():
        raise TransferError(
            f"{what}: {'host ' if out else ''}destination is a directory, expected a file "
            f"path: {dest}"
        )
    stage = dest.parent / f".sandlot-stage-{secrets.token_hex(6)}"
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        if out:
            shutil.copy2(source, stage, follow_symlinks=False)
        else:
            shutil.copyfile(source, stage)
            os.chmod(stage, stat.S_IMODE(source.stat().st_mode))
        os.replace(stage, dest)
    except OSError as exc:
        raise TransferError(f"{what} {str(source)!r} -> {str(dest)!r} failed: {exc}") from exc
    finally:
        with contextlib.suppress(FileNotFoundError):
            stage.unlink()


class _LocalCommand(RunningCommand):
    def __init__(self, proc: asyncio.subprocess.Process, spec: SpawnSpec) -> None:
        self._proc = proc
        self._killed = False
        self._tasks = [
            asyncio.ensure_future(pump(proc.stdout, spec.stdout)),
            asyncio.ensure_future(pump(proc.stderr, spec.stderr)),
        ]
        self._feeder: asyncio.Future[None] | None = None
        if proc.stdin is not None:
            self._feeder = asyncio.ensure_future(feed_stdin(proc.stdin, spec.stdin))
        self._done = asyncio.ensure_future(self._finish())

    async def _finish(self) -> int:
        try:
            await asyncio.gather(*self._tasks)
            if self._feeder is not None and not self._feeder.done():
                await self._reaped()  # output is over; stdin matters until the exit
                await stop_feeding(self._feeder)
        except asyncio.CancelledError:
            if not self._killed:
                raise
            # kill() gave up on the pipes: a process that left the group still holds them.
            # asyncio's Process.wait() resolves only once every pipe has closed, so it would
            # wait for that process; the exit status is known as soon as the child is reaped.
            code = await self._reaped()
            self._release_pipes()
        else:
            code = await self._proc.wait()
        return 128 - code if code < 0 else code

    async def _reaped(self) -> int:
        while self._proc.returncode is None:  # noqa: ASYNC110 - no event fires before the pipes close
            await asyncio.sleep(0.02)
        return self._proc.returncode

    def _release_pipes(self) -> None:
        # The transport owns the pipe file descriptors; closing it closes them (our ends only:
        # the holder keeps its copies). Process exposes no public handle to it.
        transport = getattr(self._proc, "_transport", None)
        if transport is not None:
            transport.close()

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def kill(self) -> None:
        self._killed = True
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)
        if self._done.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._done), DRAIN_AFTER_KILL)
        except TimeoutError:
            for task in self._tasks:
                task.cancel()
            if self._feeder is not None:
                self._feeder.cancel()


class LocalSandbox(Sandbox):
    # The local group kill waits for the pipes to drain; an escaped holder would keep them
    # open for the whole drain bound, so the marked processes go first here.
    _sweep_before_kill = True

    def __init__(self, worktree: str, options: LocalOptions, bwrap: str | None) -> None:
        super().__init__(provider="local", worktree=worktree, name=os.path.basename(worktree))
        self.options = options
        self._bwrap = bwrap
        self._env = sandbox_environment(options.env, options.inherit_env)
        #: Under bwrap: the namespace every command shares (None: one per command).
        self._network: SharedNetwork | None = None
        #: Under bwrap: no capabilities, a user namespace where possible (local_bwrap.py).
        self._confinement: tuple[str, ...] = ()

    def _wrap(self, line: str, *, die_with_parent: bool = True, tty: bool = False) -> list[str]:
        if self._bwrap is None:
            return ["sh", "-c", line]
        argv = self._bwrap_argv(line, unshare_net=self._network is None,
                                die_with_parent=die_with_parent, tty=tty)
        if self._network is not None:
            return [*self._network.prefix(), *argv]
        return argv

    async def _spawn_detached(
        self, argv: list[str], *, cwd: str, env: dict[str, str]
    ) -> None:
        if self._bwrap is None:
            await super()._spawn_detached(argv, cwd=cwd, env=env)
            return
        # Every command has a PID namespace of its own that ends with it, so a detached
        # process needs a bubblewrap of its own, started from here: in a new session
        # (`setsid -f` returns at once, leaving no child of ours to reap). No pipe of ours
        # may reach it: reading one to its end would wait for the process to end.
        line = _shell.render(argv, cwd=cwd, env=env)
        proc = await asyncio.create_subprocess_exec(
            "setsid", "-f", *self._wrap(line, die_with_parent=False),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
            env=self._env,
        )
        if await proc.wait() != 0:
            raise SandboxStartError(
                "cannot start a detached process under bubblewrap: setsid failed",
                provider="local",
            )

    def _close_ends_durable(self) -> bool:
        # The worktree goes, but host processes would not go with it.
        return self.options.on_close == "delete"

    def _bwrap_argv(
        self, line: str, *, unshare_net: bool, die_with_parent: bool = True, tty: bool = False
    ) -> list[str]:
        assert self._bwrap is not None
        return [
            self._bwrap,
            *self._confinement,
            # A session of its own, so no terminal of the host's is its controlling one (no
            # TIOCSTI into the caller's shell); a PTY session keeps the PTY sandlot made it.
            *([] if tty else ["--new-session"]),
            "--ro-bind", "/", "/",
            "--dev", "/dev",
            "--dev-bind", "/dev/pts", "/dev/pts",  # so a PTY made outside shows up inside
            "--proc", "/proc",
            "--tmpfs", "/tmp",
            "--bind", self.worktree, self.worktree,
            *(["--unshare-net"] if unshare_net else []),
            "--unshare-pid",
            *(["--die-with-parent"] if die_with_parent else []),
            "sh", "-c", line,
        ]  # fmt: skip

    async def _spawn(self, spec: SpawnSpec) -> RunningCommand:
        stdin = asyncio.subprocess.PIPE if spec.stdin is not None else asyncio.subprocess.DEVNULL
        env = self._env
        mark = spec.env.get(_run_marks.RUN_ENV)
        if mark is not None:  # marked from the first instruction, not only after the prelude
            env = {**env, _run_marks.RUN_ENV: mark}
        proc = await asyncio.create_subprocess_exec(
            *self._wrap(spec.shell_line()),
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        return _LocalCommand(proc, spec)

    async def _sweep(self, mark: str) -> None:
        # The sandbox's processes are this host's (under bwrap too: its PID namespace is a
        # child of ours), so /proc here sees them all.
        await _run_marks.host_sweep(mark)

    async def _interactive(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        stdin: BinaryIO,
        stdout: BinaryIO,
        stderr: BinaryIO,
        tty: bool,
    ) -> int:
        cmd = self._wrap(_shell.render(argv, cwd=cwd, env=env), tty=tty)
        if tty:
            return await asyncio.to_thread(run_with_pty, cmd, self._env, stdin, stdout)
        return await asyncio.to_thread(run_piped, cmd, self._env, stdin, stdout, stderr)

    async def _forward_preflight(self) -> None:
        if self._bwrap is None:
            return
        if self._network is None:
            from ..forward import PortForwardUnsupportedError

            raise PortForwardUnsupportedError(
                "forward_port: this bwrap sandbox gives every command a private network "
                "namespace of its own (sharing one needs root and nsenter), so nothing outside "
                "a command can reach a port it listens on; run as root, use the local backend "
                "without bwrap, or docker"
            )
        await super()._forward_preflight()

    async def _forward_connection(
        self, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
    ) -> None:
        if self._bwrap is not None:  # a relay inside the sandbox's network namespace
            await super()._forward_connection(client, remote_host, remote_port)
            return
        # Without bubblewrap the sandbox's ports are this host's: connect directly.
        from ..forward import splice

        try:
            remote = await anyio.connect_tcp(remote_host, remote_port)
        except OSError:
            return  # nothing listens there: the caller closes the connection
        async with remote:
            await splice(client, remote)

    async def _copy_in(self, source: Path, dest: str) -> None:
        # Without bubblewrap a sandbox path IS a host path: a single file is copied directly
        # (staged beside the destination, then renamed) instead of through tar and sh.
        if self._bwrap is None and not source.is_dir():
            await asyncio.to_thread(partial(_copy_file_staged, source, Path(dest), out=False))
            return
        await super()._copy_in(source, dest)

    async def _copy_out(self, source: str, host: Path) -> None:
        # The same direct path out for one regular file (sendfile, not tar and sh); anything
        # else (a directory, a link, a missing path) takes the tar stream and its errors.
        if self._bwrap is None:
            try:
                regular = stat.S_ISREG(os.lstat(source).st_mode)
            except OSError:
                regular = False
            if regular:
                await asyncio.to_thread(
                    partial(_copy_file_staged, Path(source), host.absolute(), out=True)
                )
                return
        await super()._copy_out(source, host)

    async def _close(self) -> None:
        if self._network is not None:
            await self._network.stop()
        if self.options.on_close == "delete":
            await asyncio.to_thread(remove_tree, self.worktree)


if sys.platform == "win32":  # pragma: no cover - documented limitation
    raise ImportError("the local backend needs a POSIX system")
