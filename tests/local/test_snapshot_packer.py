"""packer.py (adr/0056) held to git itself: the tree a snapshot records is the one `git add -A`
alone makes, the pack and index it writes pass git's own checks, git then finds every entry
clean, and whatever it cannot do is left to git with nothing half-written.

Each test stages a tree with the packer and then `git add -A` (what the TAKE script does), and
the same tree in a second store with `git add -A` only, and compares the two `write-tree`s."""

from __future__ import annotations

import ast
import logging
import os
import random
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

import sandlot
from sandlot import Sandbox
from sandlot.snapshots import packer, scripts, store
from tests.helpers import require

pytestmark = pytest.mark.anyio

#: The store configuration the TAKE script sets.
CONFIG = ("core.autocrlf=false", "core.symlinks=true", "core.filemode=true", "gc.auto=0",
          "core.compression=0", "core.loosecompression=0", "pack.compression=0")


class Store:
    """A snapshot store of `root` at `git_dir`, driven the way the scripts drive it."""

    def __init__(self, root: Path, git_dir: Path) -> None:
        self.root, self.git_dir = root, git_dir
        self.index = git_dir / "sandlot-index"
        self.env = {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(root),
                    "GIT_INDEX_FILE": str(self.index), "GIT_CONFIG_NOSYSTEM": "1",
                    "HOME": str(git_dir), "LC_ALL": "C"}
        self.git("init", "-q")
        for kv in CONFIG:
            self.git("config", *kv.split("=", 1))

    def git(self, *args: str, check: bool = True) -> bytes:
        done = subprocess.run(["git", *args], cwd=self.root, env=self.env, check=check,
                              capture_output=True)
        return done.stdout

    def changed(self) -> list[bytes]:
        return [n for n in self.git("ls-files", "-z", "-o", "-m", "--exclude-standard")
                .split(b"\0") if n]

    def packed(self) -> str:
        """Stage with the packer (in this process) and git; the tree's name."""
        names = [n for n in self.changed() if not n.endswith(b"/")]
        cwd = os.getcwd()
        os.chdir(self.root)
        try:
            if names:
                packer.stage(names, str(self.git_dir), str(self.index))
        finally:
            os.chdir(cwd)
        return self.added()

    def added(self) -> str:
        """Stage with `git add -A` only; the tree's name."""
        self.git("-c", "core.bigFileThreshold=1", "add", "-A")
        return self.git("write-tree").decode().strip()

    def check(self) -> None:
        self.git("fsck", "--full", "--strict", "--no-dangling")
        for idx in (self.git_dir / "objects" / "pack").glob("*.idx"):
            self.git("verify-pack", str(idx))
        assert not list((self.git_dir / "objects" / "pack").glob("tmp_*"))
        assert not Path(f"{self.index}.lock").exists()

    def packs(self) -> int:
        return len(list((self.git_dir / "objects" / "pack").glob("pack-*.pack")))


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Path, Store, Store]]:
    """A tree, a store the packer fills and one only git fills."""
    root = tmp_path / "tree"
    root.mkdir()
    yield root, Store(root, tmp_path / "packed"), Store(root, tmp_path / "plain")


def make_hostile_tree(root: Path) -> None:
    (root / "src" / "deep").mkdir(parents=True)
    (root / "empty-dir").mkdir()
    (root / ".gitignore").write_text("ignored/\n*.o\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "out").write_text("build output")
    (root / "x.o").write_bytes(b"obj")
    for name in (b"new\nline", b"back\\slash", b"-leading", b"bad-\xff\xfe", "ünï côdé".encode(),
                 b" spaced ", b"tab\there"):
        (root / os.fsdecode(name)).write_bytes(b"name " + name)
    (root / "empty").write_bytes(b"")
    (root / "one").write_bytes(b"1")
    (root / "dup-a").write_bytes(b"same bytes\n")
    (root / "dup-b").write_bytes(b"same bytes\n")
    # Around one stored deflate block (65535 bytes), and above what is read whole (streamed).
    for size in (65534, 65535, 65536, 65537, 3 * 65535, packer.WHOLE, packer.WHOLE + 1,
                 3 * packer.WHOLE + 12345):
        (root / "src" / f"s{size}").write_bytes(random.Random(size).randbytes(size))
    run = root / "src" / "run.sh"
    run.write_text("#!/bin/sh\necho hi\n")
    run.chmod(0o755)
    os.symlink("src/run.sh", root / "link")
    os.symlink("nowhere", root / "dangling")
    os.symlink("src", root / "dirlink")
    os.symlink(os.fsdecode(b"target-\xff"), root / "odd-link")
    (root / "src" / "deep" / "file.txt").write_text("deep\n")


def test_the_tree_is_the_one_git_add_makes(stores: tuple[Path, Store, Store]) -> None:
    root, packed, plain = stores
    make_hostile_tree(root)
    assert packed.packed() == plain.added()
    packed.check()
    assert packed.packs() == 1

    # Every kind of change since: deleted, a file now a directory and a directory now a file,
    # the executable bit, a link's target, the same size with other bytes, bytes the store
    # already has, new files.
    (root / "one").unlink()
    (root / "empty").unlink()
    (root / "empty").mkdir()
    (root / "empty" / "inside").write_text("was a file\n")
    (root / "src" / "deep" / "file.txt").unlink()
    (root / "src" / "deep").rmdir()
    (root / "src" / "deep").write_text("was a directory\n")
    (root / "src" / "run.sh").chmod(0o644)
    (root / "link").unlink()
    os.symlink("dup-a", root / "link")
    (root / "dup-a").write_bytes(b"SAME bytes\n")
    (root / "copy-of-big").write_bytes((root / f"src/s{packer.WHOLE + 1}").read_bytes())
    (root / "brand-new").write_bytes(os.urandom(5000))
    assert packed.packed() == plain.added()
    packed.check()


def test_git_finds_every_entry_clean(stores: tuple[Path, Store, Store]) -> None:
    """The index entries carry the files' stat as git would, so `git add -A` after the packer
    reads no file: git's own view of them (ls-files --debug) is the lstat of each."""
    root, packed, _ = stores
    make_hostile_tree(root)
    names = [n for n in packed.changed() if not n.endswith(b"/")]
    os.chdir(root)
    packer.stage(names, str(packed.git_dir), str(packed.index))
    # -z --debug: a name, NUL, its stat lines (the last one ends in "flags"), the next name...
    chunks = packed.git("ls-files", "-z", "--debug").split(b"\0")
    seen = 0
    name = chunks[0]
    for chunk in chunks[1:]:
        end = chunk.index(b"\n", chunk.index(b"\tflags: ")) + 1
        text, following = chunk[:end].decode(), chunk[end:]
        st = os.lstat(root / os.fsdecode(name))
        assert f"ctime: {st.st_ctime_ns // 10**9}:{st.st_ctime_ns % 10**9}\n" in text, name
        assert f"mtime: {st.st_mtime_ns // 10**9}:{st.st_mtime_ns % 10**9}\n" in text, name
        assert f"ino: {st.st_ino & 0xFFFFFFFF}\n" in text, name
        assert f"size: {st.st_size & 0xFFFFFFFF}\t" in text, name
        seen += 1
        name = following
    assert seen == len(names) >= 26


def test_an_entry_changed_in_the_second_its_index_was_written_is_compared_again(
    stores: tuple[Path, Store, Store],
) -> None:
    """git's racy rule: a kept entry as new as the index it was read from gets size 0 when the
    packer writes the index anew (later, so its stat would look trustworthy), and git compares
    its contents next time instead of trusting the stat."""
    root, packed, _ = stores
    written = int(time.time()) - 50
    (root / "old").write_text("old\n")
    os.utime(root / "old", (written - 100, written - 100))
    (root / "racy").write_text("aaaa\n")  # changed after `written`
    packed.git("add", "old", "racy")
    os.utime(packed.index, (written, written))  # as if the index was written back then
    (root / "new").write_text("new\n")
    entries, _ = packer.read_index(str(packed.index))
    assert packer.ENTRY.unpack(entries[b"racy"])[9] == 5
    os.chdir(root)
    packer.stage([b"new"], str(packed.git_dir), str(packed.index))
    entries, _ = packer.read_index(str(packed.index))
    assert packer.ENTRY.unpack(entries[b"racy"])[9] == 0  # smudged: compared next time
    assert packer.ENTRY.unpack(entries[b"old"])[9] == 4  # trusted
    assert packer.ENTRY.unpack(entries[b"new"])[9] == 4
    tree = packed.added()
    assert packed.git("cat-file", "-p", f"{tree}:racy") == b"aaaa\n"


class ChangingWhileRead:
    """`os` for the packer, except that the first read of `victim` appends to it first."""

    def __init__(self, victim: Path) -> None:
        self.victim, self.done = victim, False

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def read(self, fd: int, size: int) -> bytes:
        if not self.done and os.path.samestat(os.fstat(fd), os.stat(self.victim)):
            self.done = True
            with open(self.victim, "ab") as handle:
                handle.write(b"written while the packer read")
        return os.read(fd, size)


@pytest.mark.parametrize("size", [100, 3 * packer.WHOLE], ids=["read-whole", "streamed"])
def test_a_file_changed_while_read_is_left_to_git(
    stores: tuple[Path, Store, Store], monkeypatch: pytest.MonkeyPatch, size: int,
) -> None:
    root, packed, plain = stores
    victim = root / "victim"
    victim.write_bytes(os.urandom(size))
    (root / "other").write_bytes(b"other\n")
    monkeypatch.setattr(packer, "os", ChangingWhileRead(victim))
    names = [n for n in packed.changed() if not n.endswith(b"/")]
    os.chdir(root)
    packer.stage(names, str(packed.git_dir), str(packed.index))
    monkeypatch.undo()
    entries, _ = packer.read_index(str(packed.index))
    assert set(entries) == {b"other"}  # no entry for what changed, nor its blob in the pack
    assert int(packed.git("count-objects", "-v").split(b"in-pack: ")[1].split()[0]) == 1
    assert packed.added() == plain.added()
    packed.check()


def test_an_index_it_does_not_know_is_left_to_git_untouched(
    stores: tuple[Path, Store, Store],
) -> None:
    """An entry with extended flags (here git's intent-to-add, which a restore leaves when
    it is interrupted): nothing is written, and git does it all."""
    root, packed, plain = stores
    (root / "a").write_text("a\n")
    packed.git("add", "-N", "a")
    (root / "b").write_text("b\n")
    before = packed.index.read_bytes()
    os.chdir(root)
    with pytest.raises(packer.LeftToGit, match="extended flags"):
        packer.stage([b"a", b"b"], str(packed.git_dir), str(packed.index))
    assert packed.index.read_bytes() == before
    assert packed.packs() == 0
    assert packed.added() == plain.added()
    packed.check()


def test_a_locked_index_is_left_to_git(stores: tuple[Path, Store, Store]) -> None:
    root, packed, _ = stores
    (root / "a").write_text("a\n")
    Path(f"{packed.index}.lock").write_text("")
    os.chdir(root)
    with pytest.raises(packer.LeftToGit, match="locked"):
        packer.stage([b"a"], str(packed.git_dir), str(packed.index))
    assert Path(f"{packed.index}.lock").read_text() == ""  # someone else's: not removed
    assert packed.packs() == 0


def run_take(worktree: Path, packer_source: str, path: str,
             many: str = "1 0") -> subprocess.CompletedProcess[str]:
    """The TAKE script itself, as `store.take` runs it, with `path` as PATH; the packer used
    from `many` ("<files> <bytes>") changed on (by default: always)."""
    argv = ["sh", "-c", scripts.TAKE, "sandlot-snapshot", f"{worktree}/.sandlot",
            store._root_words([str(worktree)], False, ()), "-", "0" * 32, "0" * 12,
            '{"v": 1}', packer_source, many, *store._pathspecs(())]
    return subprocess.run(argv, cwd="/", capture_output=True, text=True, check=False,
                          env={**os.environ, "PATH": path})


def tree_of(worktree: Path, commit: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", f"{commit}:r0"], capture_output=True, text=True, check=True,
        env={**os.environ, "GIT_DIR": f"{worktree}/.sandlot/snapshots/git"},
    ).stdout.strip()


def test_the_script_without_python3_or_with_a_failing_packer_records_the_same_tree(
    tmp_path: Path,
) -> None:
    git_only = tmp_path / "bin"
    git_only.mkdir()
    for tool in ("git", *scripts.TOOLS, "sh", "flock", "rm", "mv", "cut", "sort",
                 "head", "od", "grep", "find"):
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True,
                               text=True, check=False).stdout.strip()
        if found.startswith("/") and not (git_only / tool).exists():
            os.symlink(found, git_only / tool)
    trees = {}
    for how, source, path in (
        ("packer", store.PACKER_SOURCE, os.environ["PATH"]),
        ("no python3", store.PACKER_SOURCE, str(git_only)),
        ("failing packer", "import sys; sys.exit(1)", os.environ["PATH"]),
    ):
        worktree = tmp_path / how.replace(" ", "-")
        worktree.mkdir()
        make_hostile_tree(worktree)
        done = run_take(worktree, source, path)
        assert done.returncode == 0, done.stderr
        if how == "failing packer":
            assert "the snapshot packer failed (exit 1); git hashed the files" in done.stderr
        else:
            assert "sandlot:" not in done.stderr
        trees[how] = tree_of(worktree, done.stdout.split()[1])
    assert trees["packer"] == trees["no python3"] == trees["failing packer"]


@pytest.mark.parametrize(("many", "used"), [
    ("64 8388608", False),  # 26 files, 3.3 MiB: git's
    ("26 8388608", True),
    ("64 3000000", True),
])
def test_few_small_changes_stay_with_git(tmp_path: Path, many: str, used: bool) -> None:
    """Below both thresholds the packer is not even started (a failing one says nothing)."""
    make_hostile_tree(tmp_path)
    done = run_take(tmp_path, "import sys; sys.exit(1)", os.environ["PATH"], many)
    assert done.returncode == 0, done.stderr
    assert ("the snapshot packer failed" in done.stderr) is used


@pytest.fixture
async def sandbox() -> Any:
    async with sandlot.local().session() as made:
        yield made


async def test_a_failing_packer_is_logged_and_the_snapshot_still_right(
    sandbox: Sandbox, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(store, "PACKER_SOURCE", "raise SystemExit(2)")
    monkeypatch.setattr(store, "PACKER_FILES", 1)
    await sandbox.exec("mkdir d && echo one > d/a && printf 'two' > b", check=True)
    with caplog.at_level(logging.WARNING, logger="sandlot.snapshots"):
        snap = await sandbox.snapshot()
    assert "the snapshot packer failed (exit 2); git hashed the files" in caplog.text
    await sandbox.exec("rm -r d b && echo three > c", check=True)
    await sandbox.restore(snap)
    assert (await sandbox.exec("cat d/a b; ls", check=True)).stdout == "one\ntwob\nd\n"


async def test_a_snapshot_killed_while_it_packs_leaves_the_next_one_working(
    sandbox: Sandbox,
) -> None:
    """Cancelled while the packer holds the index lock and writes its pack (the process group
    is killed): the next snapshot removes what the killed one left, and records the tree."""
    await sandbox.exec("for d in 1 2 3 4 5 6 7 8; do mkdir d$d; for i in $(seq 40); do "
                       "head -c 262144 /dev/urandom > d$d/f$i; done; done", check=True)
    lock: Path | None = None
    state = Path(sandbox.worktree, ".sandlot", "snapshots")
    with anyio.move_on_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(sandbox.snapshot)
            while lock is None:
                await anyio.sleep(0.001)
                lock = next(iter(state.glob("idx/*.lock")), None)
            group.cancel_scope.cancel()
    assert lock is not None, "the packer was never seen at work"
    await anyio.sleep(0.5)  # the group kill lands
    assert lock.exists() or list(state.glob("git/objects/pack/tmp_*"))  # what it left
    await sandbox.exec("echo after > d1/new", check=True)
    snap = await sandbox.snapshot()
    assert not lock.exists() and not list(state.glob("git/objects/pack/tmp_*"))
    assert snap.files == 321
    await sandbox.exec("rm -r d1 d2", check=True)
    await sandbox.restore(snap)
    assert (await sandbox.exec("cat d1/new; ls d2 | wc -l", check=True)).stdout == "after\n40\n"


def test_the_packer_runs_on_the_oldest_python_it_promises(tmp_path: Path) -> None:
    """It is sent as source to whatever python3 the sandbox has: run on 3.8, through the
    script, it records what the newest does."""
    oldest = Path("/root/.pyenv/versions/3.8.18/bin/python3.8")
    require(oldest.exists(), f"{oldest} (pyenv's Python 3.8) is not installed")
    ast.parse(store.PACKER_SOURCE, feature_version=(3, 8))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(oldest, bin_dir / "python3")
    trees: list[str] = []
    for path in (f"{bin_dir}:{os.environ['PATH']}", os.environ["PATH"]):
        worktree = tmp_path / f"tree{len(trees)}"
        worktree.mkdir()
        make_hostile_tree(worktree)
        done = run_take(worktree, store.PACKER_SOURCE, path)
        assert done.returncode == 0 and "sandlot:" not in done.stderr, done.stderr
        trees.append(tree_of(worktree, done.stdout.split()[1]))
    assert trees[0] == trees[1]
