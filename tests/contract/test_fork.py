"""sandlot.fork on every backend (issue 31): N=4 forks each start from the source's files and
are isolated from each other; a fork of a snapshot starts from it; a closed source is a typed
error; a cancel while forking leaves nothing (forks, fork images, worktrees)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator
from types import ModuleType

import anyio
import pytest

import sandlot
from sandlot import ForkSourceClosedError, IsolatedSandboxProvider, Sandbox

pytestmark = pytest.mark.anyio


@pytest.fixture
async def source(provider: IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    async with provider.session() as made:
        await made.exec("mkdir -p src && printf 'base\\n' > src/a.txt && "
                        "printf '\\000\\377' > bin && chmod +x bin", check=True)
        yield made


def docker_leftovers(backend: ModuleType) -> tuple[set[str], set[str]]:
    """Fork images and the containers made from any of them (docker only)."""
    if backend.NAME != "docker":
        return set(), set()
    eng = backend.engine()
    base = ["docker", "-H", eng.host]
    images = subprocess.run([*base, "images", "-q", "--filter", "label=sandlot.fork=true"],
                            capture_output=True, text=True, check=True).stdout.split()
    containers: set[str] = set()
    for image in images:
        containers |= set(subprocess.run(
            [*base, "ps", "-aq", "--filter", f"ancestor={image}"],
            capture_output=True, text=True, check=True).stdout.split())
    return set(images), containers


async def test_four_forks_see_the_source_and_not_each_other(
    source: Sandbox, backend: ModuleType
) -> None:
    before = docker_leftovers(backend)
    async with sandlot.fork(source, n=4) as forks:
        assert len(forks) == 4 and len({f.name for f in forks} | {source.name}) == 5
        for index, fork in enumerate(forks):
            seen = await fork.exec("cat src/a.txt && od -An -c bin && test -x bin", check=True)
            assert seen.stdout.split() == ["base", "\\0", "377"]
            await fork.exec(f"echo {index} > mine.txt && echo {index} >> src/a.txt", check=True)
        for index, fork in enumerate(forks):
            seen = await fork.exec("cat mine.txt src/a.txt; ls -A .sandlot 2>/dev/null")
            assert seen.stdout == f"{index}\nbase\n{index}\n"
        assert (await source.exec("ls; cat src/a.txt")).stdout == "bin\nsrc\nbase\n"
        if backend.NAME.startswith("local"):
            assert all(os.path.isdir(f.worktree) for f in forks)
    assert all(f.closed for f in forks)
    if backend.NAME.startswith("local"):
        assert not any(os.path.exists(f.worktree) for f in forks)
    assert docker_leftovers(backend) == before


async def test_a_closed_source_is_a_typed_error(
    provider: IsolatedSandboxProvider, backend: ModuleType
) -> None:
    before = docker_leftovers(backend)
    async with provider.session() as gone:
        pass
    with pytest.raises(ForkSourceClosedError, match="closed"):
        async with sandlot.fork(gone, n=2):
            pytest.fail("forked a closed sandbox")
    assert docker_leftovers(backend) == before


async def test_a_cancel_while_forking_leaves_nothing(
    source: Sandbox, backend: ModuleType, tmp_path: object
) -> None:
    before = docker_leftovers(backend)
    seen: list[Sandbox] = []
    for delay in (0.05, 0.8):
        with anyio.move_on_after(delay):
            async with sandlot.fork(source, n=4) as forks:
                seen += forks
                await anyio.sleep_forever()
    assert all(f.closed for f in seen)
    if backend.NAME.startswith("local"):
        parent = os.path.dirname(source.worktree)
        mine = [e for e in os.listdir(parent) if e.startswith("sandlot-")]
        # Forks made under the source's root: every one was removed (only the source's own
        # worktree, and those of other tests on this host, remain: none of ours).
        assert not any(os.path.exists(f.worktree) for f in seen)
        assert source.worktree.rsplit("/", 1)[1] in mine
    assert docker_leftovers(backend) == before
    assert not source.closed


async def test_a_fork_of_a_snapshot_starts_from_it(
    backend: ModuleType, provider: IsolatedSandboxProvider
) -> None:
    chosen = backend.toolchain_provider() if backend.NAME == "docker" else provider
    async with chosen.session() as made:
        await made.exec("echo one > f.txt", check=True)
        snap = await made.snapshot(label="one")
        await made.exec("echo two > f.txt && echo extra > g.txt", check=True)
        async with sandlot.fork(snap, n=2) as forks:
            for fork in forks:
                seen = await fork.exec("cat f.txt; ls; ls -A .sandlot 2>/dev/null")
                assert seen.stdout == "one\nf.txt\n"
        assert (await made.exec("cat f.txt g.txt")).stdout == "two\nextra\n"
