"""The local backend: a fresh temp directory on this machine, commands as host subprocesses.

Its options, factory and provider make one of two backend classes: `LocalSandbox` (here) runs
commands as they are; with `isolation="bwrap"`, `BwrapSandbox` (local_bwrap.py) runs them
under bubblewrap: the host file system read-only, the worktree writable, a private /tmp, no
network, a PID namespace that dies with it, and no capabilities even as root. What both share
(a process group per command, the sweep, the worktree's removal) is in local_host.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import stat
import sys
import tempfile
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Literal

import anyio
import anyio.abc
from pydantic import ConfigDict, Field, TypeAdapter, field_validator, model_validator

from .._options import options_from
from .._redacted import RedactedModel
from .._tree import remove_tree
from ..errors import ConfigurationError, SandboxStartError, ToolNotFoundError, TransferError
from ..forward import splice
from ..provider import IsolatedSandboxProvider
from ..secrets import EnvText, Secret
from .local_bwrap import BwrapSandbox
from .local_env import check_inherit_env
from .local_host import HostSandbox

CHUNK = 64 << 10


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
    env: dict[str, EnvText] = Field(default_factory=dict)
    """Extra environment for every command, on top of the inherited allowlist (local_env.py)."""
    inherit_env: list[str] = Field(default_factory=list)
    """More host variables to pass on by name; SANDLOT_TOKEN and CODER_SESSION_TOKEN never are."""
    session_helper: bool = True
    """Run sandlot's file tools in one long-lived python3 process per sandbox (the session
    helper, adr/0042) instead of one command per call; False: always one command per call.
    Without python3 in the sandbox the tools take the one-command path either way."""

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
    env: Mapping[str, str | Secret] | None = None,
    inherit_env: list[str] | None = None,
    attach: str | None = None,
    session_helper: bool = True,
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

    async def create(self) -> HostSandbox:
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
            return await self._finish(self._sandbox(path, bwrap), made=False)
        root = self.options.root
        if root is not None and not os.path.isdir(root):
            raise ConfigurationError(f"local root {root!r} is not a directory; create it first")
        try:
            path = tempfile.mkdtemp(prefix="sandlot-", dir=root)
        except OSError as exc:
            raise SandboxStartError(f"cannot make a worktree: {exc}", provider="local") from exc
        return await self._finish(self._sandbox(os.path.realpath(path), bwrap), made=True)

    def _sandbox(self, worktree: str, bwrap: str | None) -> HostSandbox:
        if bwrap is not None:
            return BwrapSandbox(worktree, self.options, bwrap)
        return LocalSandbox(worktree, self.options)

    @staticmethod
    async def _finish(sandbox: HostSandbox, *, made: bool) -> HostSandbox:
        """Start what a bwrap sandbox needs; a creation that fails or is cancelled here takes
        back what it made (the worktree, if it made it, and the network holder)."""
        try:
            if isinstance(sandbox, BwrapSandbox):
                await sandbox.prepare()
        except BaseException:
            with anyio.CancelScope(shield=True):
                if isinstance(sandbox, BwrapSandbox):
                    await sandbox.release()
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


class LocalSandbox(HostSandbox):
    """The plain local backend: commands run as they are on this host, whose ports and paths
    the sandbox's are, so forwards and single-file copies take the direct way."""

    async def _forward_preflight(self) -> None:
        return None  # the sandbox's ports are this host's: nothing to probe

    async def _forward_connection(
        self, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
    ) -> None:
        # The sandbox's ports are this host's: connect directly.
        try:
            remote = await anyio.connect_tcp(remote_host, remote_port)
        except OSError:
            return  # nothing listens there: the caller closes the connection
        async with remote:
            await splice(client, remote)

    async def _copy_in(self, source: Path, dest: str) -> None:
        # A sandbox path IS a host path: a single file is copied directly (staged beside the
        # destination, then renamed) instead of through tar and sh.
        if not source.is_dir():
            await asyncio.to_thread(partial(_copy_file_staged, source, Path(dest), out=False))
            return
        await super()._copy_in(source, dest)

    async def _copy_out(self, source: str, host: Path) -> None:
        # The same direct path out for one regular file (sendfile, not tar and sh); anything
        # else (a directory, a link, a missing path) takes the tar stream and its errors.
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


if sys.platform == "win32":  # pragma: no cover - documented limitation
    raise ImportError("the local backend needs a POSIX system")
