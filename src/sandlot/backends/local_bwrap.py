"""The bubblewrap backend (`sandlot.local(isolation="bwrap")`), and how far bubblewrap
confines a command on this host: the flags every sandbox command gets.

`BwrapSandbox` is the local backend with every command under bubblewrap: the host file system
read-only, the worktree writable, a private /tmp, no network (or one namespace all commands
share, local_netns.py), a PID namespace that dies with the command, no capabilities.

Run as root, bubblewrap keeps every capability unless told otherwise, so a command could
`mount -o remount,rw /` and write the host. Every command therefore runs with `--cap-drop ALL`
(its effective, permitted, inheritable and ambient sets empty), which always works. Where the
host allows it, it also runs in a user namespace of its own (`--unshare-user`): the mounts it
sees are then locked read-only by the kernel, a second wall should a capability ever come
back; and `--disable-userns` keeps it from making a nested one. Which of these this bwrap and
kernel accept is probed once per bwrap binary.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from .. import _shell
from ..errors import PortForwardUnsupportedError, SandboxStartError
from .local_host import HostSandbox
from .local_netns import SharedNetwork

if TYPE_CHECKING:
    from .local import LocalOptions

log = logging.getLogger("sandlot.local")

#: Always given; bwrap has taken it since 0.2.
DROP_CAPS = ("--cap-drop", "ALL")

#: The user-namespace flags, most confining first; the first this host accepts is used.
_USERNS_CHOICES: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--disable-userns"),
    ("--unshare-user",),
    (),
)

_probed: dict[str, tuple[str, ...]] = {}


async def confinement(bwrap: str) -> tuple[str, ...]:
    """The flags that confine every command under `bwrap` (cached per binary)."""
    if bwrap not in _probed:
        _probed[bwrap] = await _probe(bwrap)
    return _probed[bwrap]


async def _probe(bwrap: str) -> tuple[str, ...]:
    for userns in _USERNS_CHOICES:
        flags = (*userns, *DROP_CAPS)
        if await _accepted(bwrap, flags):
            if not userns:
                log.info("bwrap sandbox: no user namespace here; commands run without "
                         "capabilities in the host's")
            return flags
    # Even the capability drop alone was refused: the sandbox would be no boundary, so fail
    # loudly at the first command rather than run one with every capability.
    return DROP_CAPS


async def _accepted(bwrap: str, flags: tuple[str, ...]) -> bool:
    proc = await asyncio.create_subprocess_exec(
        bwrap, *flags, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
        "--unshare-pid", "--die-with-parent", "true",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        return await proc.wait() == 0
    except BaseException:
        proc.kill()
        raise


class BwrapSandbox(HostSandbox):
    """A local sandbox whose every command runs under bubblewrap."""

    def __init__(self, worktree: str, options: LocalOptions, bwrap: str) -> None:
        super().__init__(worktree, options)
        self._bwrap = bwrap
        #: The namespace every command shares (None: one per command).
        self._network: SharedNetwork | None = None
        #: No capabilities, a user namespace where possible (`confinement`).
        self._confinement: tuple[str, ...] = ()

    async def prepare(self) -> None:
        """Probe the confinement and start the shared network namespace (where possible);
        the provider takes back what this made should it fail."""
        self._confinement = await confinement(self._bwrap)
        self._network = await SharedNetwork.start(self._bwrap)

    async def release(self) -> None:
        """Stop the shared network namespace, if one was started."""
        if self._network is not None:
            await self._network.stop()

    def _wrap(self, line: str, *, die_with_parent: bool = True, tty: bool = False) -> list[str]:
        argv = self._bwrap_argv(line, unshare_net=self._network is None,
                                die_with_parent=die_with_parent, tty=tty)
        if self._network is not None:
            return [*self._network.prefix(), *argv]
        return argv

    def _bwrap_argv(
        self, line: str, *, unshare_net: bool, die_with_parent: bool = True, tty: bool = False
    ) -> list[str]:
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

    async def _spawn_detached(
        self, argv: list[str], *, cwd: str, env: dict[str, str]
    ) -> None:
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

    async def _forward_preflight(self) -> None:
        if self._network is None:
            raise PortForwardUnsupportedError(
                "forward_port: this bwrap sandbox gives every command a private network "
                "namespace of its own (sharing one needs root and nsenter), so nothing outside "
                "a command can reach a port it listens on; run as root, use the local backend "
                "without bwrap, or docker"
            )
        # Then the default: a relay program inside the sandbox's network namespace.
        await super()._forward_preflight()

    async def _close(self) -> None:
        await self.release()
        await super()._close()
