"""Snapshot options on the local backend (the logic is backend-neutral; the contract suite runs
the core on every backend): ignored output, include_ignored, exclude, several roots, bad input,
a full disk."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest

import sandlot
from sandlot import ConfigurationError, Sandbox, SnapshotDiskFullError, SnapshotNotFoundError
from sandlot.snapshots import store as snapshot_store
from tests.helpers import require

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with sandlot.local().session() as made:
        yield made


async def sh(sandbox: Sandbox, line: str) -> str:
    return (await sandbox.exec(line, check=True)).stdout


async def test_ignored_output_is_left_out_and_left_alone(sandbox: Sandbox) -> None:
    await sh(sandbox, "printf 'build/\\n' > .gitignore && mkdir build && echo 1 > build/o "
                      "&& echo src > s")
    snap = await sandbox.snapshot()
    await sh(sandbox, "echo 2 > build/o && echo 9 > build/new && echo changed > s")
    diff = await sandbox.snapshot_diff(snap)
    assert [c.path for c in diff.changes] == ["s"]
    await sandbox.restore(snap)
    assert await sh(sandbox, "cat s build/o build/new") == "src\n2\n9\n"


async def test_include_ignored_records_build_output_too(sandbox: Sandbox) -> None:
    await sh(sandbox, "printf 'build/\\n' > .gitignore && mkdir build && echo 1 > build/o")
    snap = await sandbox.snapshot(include_ignored=True)
    assert snap.include_ignored and snap.files == 2
    await sh(sandbox, "echo 2 > build/o && echo 9 > build/new")
    await sandbox.restore(snap)
    listed = await sh(sandbox, "cat build/o; ls build; ls -A .sandlot")
    assert listed == "1\no\n.gitignore\nsnapshots\n"
    # A later default snapshot does not inherit the ignored files (an index per option set).
    assert (await sandbox.snapshot()).files == 1


async def test_exclude_leaves_out_what_it_names(sandbox: Sandbox) -> None:
    await sh(sandbox, "mkdir -p data/big && echo x > data/big/f && echo y > keep && echo z > a.log")
    snap = await sandbox.snapshot(exclude=["data", "*.log"])
    assert snap.files == 1 and snap.exclude == ("data", "*.log")
    await sh(sandbox, "echo changed > data/big/f && rm a.log && echo new > keep")
    await sandbox.restore(snap.id)
    assert await sh(sandbox, "cat keep data/big/f; test ! -e a.log && echo gone") == (
        "y\nchanged\ngone\n"
    )


async def test_several_roots_and_their_diff(sandbox: Sandbox) -> None:
    one, two = f"{sandbox.worktree}/one", f"{sandbox.worktree}/two"
    await sh(sandbox, "mkdir one two && echo 1 > one/f && echo 2 > two/f && echo 3 > outside")
    snap = await sandbox.snapshot(label="two roots", paths=[one, two])
    assert snap.roots == (one, two) and snap.files == 2
    await sh(sandbox, "echo x > one/f && rm two/f && echo y > outside")
    diff = await sandbox.snapshot_diff(snap)
    assert sorted((c.root, c.status, c.path) for c in diff.changes) == [
        (one, "M", "f"), (two, "D", "f")]
    assert b"a/0/f" in diff.patch and b"a/1/f" in diff.patch
    await sandbox.restore(snap)
    assert await sh(sandbox, "cat one/f two/f outside") == "1\n2\ny\n"


async def test_bad_input_is_refused_before_anything_runs(sandbox: Sandbox) -> None:
    with pytest.raises(ConfigurationError, match="overlap"):
        await sandbox.snapshot(paths=[sandbox.worktree, f"{sandbox.worktree}/sub"])
    with pytest.raises(ConfigurationError):
        await sandbox.snapshot(paths=["relative/path"])
    with pytest.raises(ConfigurationError, match="label"):
        await sandbox.snapshot(label="x" * 1001)
    with pytest.raises(ConfigurationError, match="12-hex"):
        await sandbox.restore("not-an-id")
    with pytest.raises(SnapshotNotFoundError):
        await sandbox.snapshot_diff("0123456789ab")
    assert await sandbox.snapshots() == []
    assert await sh(sandbox, "ls -A") == ""


@pytest.mark.parametrize("hashed_by", ["git", "packer"])
async def test_a_full_disk_leaves_no_snapshot_listed(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, hashed_by: str
) -> None:
    """The store sits on a 1 MiB tmpfs; a 4 MiB file cannot be recorded, whether git or the
    packer (adr/0056) writes it."""
    require(os.geteuid() == 0, "mounting a small tmpfs needs root")
    monkeypatch.setattr(snapshot_store, "PACKER_FILES", 1 if hashed_by == "packer" else 64)
    with tempfile.TemporaryDirectory() as small:
        await anyio.run_process(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", small])
        try:
            await sh(sandbox, "echo small > s")
            first = await sandbox.snapshot()  # makes the store, on the normal disk
            store = Path(sandbox.worktree, ".sandlot", "snapshots", "git", "objects")
            shutil.move(store, Path(small, "objects"))
            os.symlink(Path(small, "objects"), store)
            await sh(sandbox, "head -c 4194304 /dev/urandom > big")
            with pytest.raises(SnapshotDiskFullError, match="no snapshot was recorded"):
                await sandbox.snapshot(label="too big")
            # Nothing half-written kept: no temporary pack, no index lock.
            assert not list(Path(small, "objects").glob("pack/tmp_*"))
            assert not list(store.parent.parent.glob("idx/*.lock"))
            assert [s.id for s in await sandbox.snapshots()] == [first.id]
            await sandbox.restore(first, force=True)
            assert await sh(sandbox, "ls") == "s\n"
        finally:
            await anyio.run_process(["umount", "-l", small], check=False)


async def test_file_contents_go_into_one_pack_per_snapshot(sandbox: Sandbox) -> None:
    """A snapshot writes what it records as one pack, not a loose object file per file (the
    cost that made a first snapshot of 10,000 files slow, adr/0046); only its own small
    objects (trees, commit, meta, the empty-directory list) are loose."""
    store = f"{sandbox.worktree}/.sandlot/snapshots/git"
    loose_blobs = (
        f"cd {store}/objects && for f in ??/*; do d=${{f%%/*}}; "
        f"GIT_DIR={store} git cat-file -t $d${{f#*/}}; done | grep -c '^blob$'; "
        f"ls {store}/objects/pack | grep -c '[.]pack$'"
    )
    await sh(sandbox, "for d in a b c d; do mkdir $d; for i in $(seq 50); do "
                      "echo $d$i > $d/f$i; done; done; printf '\\0\\1' > a/bin")
    first = await sandbox.snapshot()
    assert first.files == 201
    assert (await sh(sandbox, loose_blobs)).split() == ["2", "1"]  # meta + e0, one pack
    await sh(sandbox, "echo changed > a/f1 && echo new > d/g")
    await sandbox.snapshot()
    assert (await sh(sandbox, loose_blobs)).split() == ["3", "2"]  # its meta (e0 is the same)
    await sh(sandbox, "rm -r a b && echo other > c/f1")
    await sandbox.restore(first)
    assert await sh(sandbox, "cat a/f1 c/f1 d/f50; od -An -tx1 a/bin; ls d | wc -l") == (
        "a1\nc1\nd50\n 00 01\n50\n"
    )
