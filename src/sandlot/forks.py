"""`sandlot.fork`: N new sandboxes that start from one sandbox's state (or one of its snapshots).

    async with sandlot.fork(prepared, n=8) as sandboxes:
        ...                                   # each starts with prepared's files

Per backend, the fastest honest copy (adr/0046):

* local / local-bwrap: a new worktree per fork, filled with `cp --reflink=auto -a` on the
  host (copy-on-write where the file system has it, a plain copy elsewhere);
* docker: `docker commit` of the source container to a local image labelled as sandlot's,
  N containers from it; the image is removed once the last fork closed;
* anything else (coder): N sandboxes from the same options (template, version, parameters,
  preset), each receiving the source's worktree as one tar stream.

Every fork closes with its own `on_close` (the source's unless `on_close=` says otherwise).
A failure or a cancel while forking closes every fork already made and removes the image, so
nothing is left. Forks do not inherit sandlot's state directory (snapshot store, durable
process records): those describe the source.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio

from .errors import (
    ConfigurationError,
    ForkError,
    ForkSourceClosedError,
    SandboxClosed,
    SandlotError,
)
from .provider import IsolatedSandboxProvider
from .sandbox import Sandbox
from .snapshots import Snapshot
from .snapshots import store as _snapshots

log = logging.getLogger("sandlot")

#: Labels of a fork image (docker): `sandlot gc` finds it by `sandlot.fork`.
IMAGE_LABELS = ("sandlot.managed=true", "sandlot.fork=true")
#: sandlot's state directory, which a fork must not inherit (it describes the source).
_STALE = ".sandlot"


def _closed(sandbox: Sandbox) -> ForkSourceClosedError:
    return ForkSourceClosedError(
        f"cannot fork sandbox {sandbox.name!r}: it is closed (before or during the fork); "
        "fork an open sandbox, and close it only after sandlot.fork() returned"
    )


class _Plan:
    """How forks of one source are made: prepare once, make each, release at the end."""

    def __init__(self, source: Sandbox, on_close: str | None) -> None:
        self.source = source
        self.on_close = on_close

    async def prepare(self) -> None:
        return None

    async def make(self) -> Sandbox:
        raise NotImplementedError

    async def release(self) -> None:
        return None

    def options(self, **update: Any) -> Any:
        # Each backend keeps the options it was made with (coder as _options).
        options: Any = getattr(self.source, "_options", None) or vars(self.source)["options"]
        if self.on_close is not None:
            update["on_close"] = self.on_close
        return options.model_copy(update=update)


class _LocalPlan(_Plan):
    async def make(self) -> Sandbox:
        from .backends.local import LocalProvider

        fork = await LocalProvider(self.options(attach=None)).create()
        try:
            done = await anyio.run_process(
                ["cp", "--reflink=auto", "-a", "--", f"{self.source.worktree}/.",
                 fork.worktree], check=False)
            if done.returncode != 0:
                if self.source.closed or not os.path.isdir(self.source.worktree):
                    raise _closed(self.source)
                raise ForkError(f"copying {self.source.worktree} for a fork failed: "
                                f"{done.stderr.decode(errors='replace')[-500:]}")
        except BaseException:
            with anyio.CancelScope(shield=True):
                await fork.close()
            raise
        return fork


class _DockerPlan(_Plan):
    """One committed image, N containers from it; the image goes with the last fork."""

    def __init__(self, source: Sandbox, on_close: str | None) -> None:
        super().__init__(source, on_close)
        self.image = ""
        self.users = 0
        self.done_making = False
        self.released = False

    async def prepare(self) -> None:
        from .backends.docker import DockerSandbox

        source = self.source
        assert isinstance(source, DockerSandbox)
        image = f"sandlot-fork-{secrets.token_hex(6)}"
        changes = [arg for label in IMAGE_LABELS for arg in ("--change", f"LABEL {label}")]
        with anyio.CancelScope(shield=True):  # an image the engine made must be found again
            done = await source.cli.run("commit", *changes, source.container_id, image,
                                        timeout=1800)
        if done.code != 0:
            if source.closed or source.cli.is_gone(done.stderr):
                raise _closed(source)
            raise ForkError(f"docker commit of {source.name!r} for a fork failed: "
                            f"{done.stderr.strip()[-500:]}")
        self.image = image

    async def make(self) -> Sandbox:
        from .backends.docker import DockerProvider

        options = self.options(image=self.image, attach=None, name=None)
        fork = await DockerProvider(options).create()
        self.users += 1
        fork._after_close.append(self._one_closed)
        return fork

    async def _one_closed(self) -> None:
        self.users -= 1
        if self.users == 0 and self.done_making:
            await self.release()

    async def release(self) -> None:
        from .backends.docker import DockerSandbox

        self.done_making = True
        if not self.image or self.users > 0 or self.released:
            return
        self.released = True
        assert isinstance(self.source, DockerSandbox)
        with anyio.CancelScope(shield=True):
            done = await self.source.cli.run("rmi", self.image, timeout=300)
        if done.code != 0:
            log.warning("fork image %s was not removed (%s); it is labelled sandlot.managed: "
                        "`sandlot gc` removes it", self.image, done.stderr.strip()[-300:])


class _StreamPlan(_Plan):
    """N sandboxes from a provider, each receiving the source's worktree as one tar stream."""

    def __init__(self, source: Sandbox, on_close: str | None,
                 provider: IsolatedSandboxProvider | None) -> None:
        super().__init__(source, on_close)
        self.provider = provider
        self.tmp: tempfile.TemporaryDirectory[str] | None = None

    async def prepare(self) -> None:
        if self.provider is None:
            options = getattr(self.source, "_options", None)
            if options is None or getattr(options, "template", None) is None:
                raise ConfigurationError(
                    f"sandbox {self.source.name!r} was attached, not created from a template: "
                    "sandlot cannot tell how to make more like it; pass provider= to fork()"
                )
            self.provider = self.options(workspace_name=None).build()
        self.tmp = tempfile.TemporaryDirectory(prefix="sandlot-fork-")
        try:
            await self.source.copy_out(self.source.worktree, Path(self.tmp.name) / "tree")
        except SandboxClosed:
            raise _closed(self.source) from None

    async def make(self) -> Sandbox:
        assert self.provider is not None and self.tmp is not None
        fork = await self.provider.create()
        try:
            await fork.copy_in(Path(self.tmp.name) / "tree", fork.worktree)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await fork.close()
            raise
        return fork

    async def release(self) -> None:
        if self.tmp is not None:
            await anyio.to_thread.run_sync(shutil.rmtree, self.tmp.name, True)
            self.tmp = None


def _plan(source: Sandbox, on_close: str | None,
          provider: IsolatedSandboxProvider | None) -> _Plan:
    from .backends.docker import DockerSandbox
    from .backends.local_host import HostSandbox

    if provider is None and isinstance(source, HostSandbox):
        return _LocalPlan(source, on_close)
    if provider is None and isinstance(source, DockerSandbox):
        if source.options.attach is not None:
            raise ConfigurationError(
                f"sandbox {source.name!r} was attached, not created from an image: pass "
                "provider= to fork() (the forks are made by it and receive the tree)"
            )
        return _DockerPlan(source, on_close)
    return _StreamPlan(source, on_close, provider)


@contextlib.asynccontextmanager
async def fork(
    source: Sandbox | Snapshot,
    n: int = 2,
    *,
    provider: IsolatedSandboxProvider | None = None,
    on_close: str | None = None,
    max_parallel: int = 4,
) -> AsyncIterator[list[Sandbox]]:
    """N sandboxes starting from `source` (a sandbox, or a snapshot it took); all closed
    when the block ends. `provider=` makes the forks on another provider (the tree then
    arrives as a tar stream); `on_close=` overrides the source's policy for the forks."""
    sandbox, snap = _source(source)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigurationError(f"n must be a positive int, got {n!r}")
    if max_parallel < 1:
        raise ConfigurationError(f"max_parallel must be at least 1, got {max_parallel}")
    if sandbox.closed:
        raise _closed(sandbox)
    if snap is not None:
        _inside_worktree(sandbox, snap)
    plan = _plan(sandbox, on_close, provider)
    forks: list[Sandbox] = []
    try:
        await plan.prepare()
        limit = anyio.CapacityLimiter(max_parallel)

        async def one() -> None:
            async with limit:
                made = await plan.make()
                forks.append(made)
                await _settle(made, sandbox, snap)

        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(one)
        if isinstance(plan, _DockerPlan):
            plan.done_making = True
    except BaseException as exc:
        with anyio.CancelScope(shield=True):
            await _close_all(forks)
            await plan.release()
        if sandbox.closed and not isinstance(exc, ForkSourceClosedError) and not isinstance(
                exc, anyio.get_cancelled_exc_class()):
            raise _closed(sandbox) from exc
        raise
    try:
        yield list(forks)
    finally:
        with anyio.CancelScope(shield=True):
            await _close_all(forks)
            await plan.release()


def _source(source: Sandbox | Snapshot) -> tuple[Sandbox, Snapshot | None]:
    if isinstance(source, Sandbox):
        return source, None
    if isinstance(source, Snapshot):
        owner = source.taken_in
        if owner is None:
            raise ConfigurationError(
                f"snapshot {source.id} was not taken through this program's Sandbox object "
                "(it came from snapshots() of another one, or was rebuilt): fork the sandbox "
                "that holds it, with fork(sandbox.snapshot ...) from there"
            )
        return owner, source
    raise ConfigurationError(
        f"fork() takes a Sandbox or a Snapshot, got {type(source).__name__}"
    )


def _inside_worktree(sandbox: Sandbox, snap: Snapshot) -> None:
    for root in snap.roots:
        if root != sandbox.worktree and not root.startswith(sandbox.worktree.rstrip("/") + "/"):
            raise ConfigurationError(
                f"snapshot {snap.id} records {root}, outside the worktree {sandbox.worktree}: "
                "a fork copies the worktree only; fork from a snapshot of the worktree"
            )


async def _settle(fork: Sandbox, source: Sandbox, snap: Snapshot | None) -> None:
    """Put the snapshot's tree in place (from the copied store), then drop the source's
    sandlot state, which would describe the source, not the fork."""
    if snap is not None:
        roots = tuple(fork.worktree + r[len(source.worktree):] for r in snap.roots)
        moved = Snapshot(**{**snap.__dict__, "roots": roots, "sandbox": fork.name,
                            "provider": fork.provider, "taken_in": None})
        await _snapshots.restore_unchecked(fork, moved)
    await fork.exec(f"rm -rf {_STALE}", check=True)


async def _close_all(forks: list[Sandbox]) -> None:
    errors: list[BaseException] = []

    async def close(sandbox: Sandbox) -> None:
        try:
            await sandbox.close()
        except SandlotError as exc:
            errors.append(exc)

    async with anyio.create_task_group() as group:
        for sandbox in forks:
            group.start_soon(close, sandbox)
    for exc in errors:
        log.warning("closing a fork failed: %s", exc)

