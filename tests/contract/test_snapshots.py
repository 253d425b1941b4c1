"""Work-tree snapshots on every backend (issue 31): take, change, restore, compare.

The tree is hashed by a program of its own (python3 walking the tree with byte names: type,
executable bit, contents or link target, empty directories), not by git, so a loss in the git
store shows here. Docker runs on the toolchain image (git and python3 on PATH); busybox has no
git, which tests/docker/test_snapshot_tools.py holds to a typed error.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import AsyncIterator
from types import ModuleType

import pytest

from sandlot import (
    ForeignSnapshotError,
    IsolatedSandboxProvider,
    Sandbox,
    SnapshotBusyError,
    SnapshotNotFoundError,
)
from sandlot.snapshots import store

pytestmark = pytest.mark.anyio

#: Prints a hash of the tree at argv[1]: every entry except .sandlot (and .git when argv[2]
#: is "skip-git"), by its byte name, type, executable bit, contents or link target.
TREE_HASH = r"""
import hashlib, os, stat, sys
root = os.fsencode(sys.argv[1])
skip = {b".sandlot"} | ({b".git"} if sys.argv[2] == "skip-git" else set())
h = hashlib.sha256()
for top, dirs, files in os.walk(root):
    rel = os.path.relpath(top, root)
    if rel == b".":
        dirs[:] = [d for d in dirs if d not in skip]
        files = [f for f in files if f not in skip]
    dirs.sort()
    for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(top, d))]):
        p = os.path.join(top, name); st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            body = b"L" + os.readlink(p)
        else:
            body = b"F" + bytes([st.st_mode & 0o100 and 1]) + open(p, "rb").read()
        h.update(os.path.join(rel, name) + b"\0" + hashlib.sha256(body).digest())
    h.update(b"D" + rel + b"\0" + (b"empty" if not dirs and not files else b""))
print(h.hexdigest())
"""

NL = "new\nline.txt"
BAD = b"bad-\xff\xfe.bin"

SETUP = r"""
set -e
git init -q . && git config user.name u && git config user.email u@example.invalid
echo 'tracked' > tracked.txt && printf 'build/\n*.o\n' > .gitignore
git add -A && git commit -qm base && git branch side && echo wip > wip.txt && git stash -q -u
echo 'second' > tracked.txt && git add tracked.txt
mkdir -p src/deep empty/inner build
printf '\000\001\002\377binary' > src/blob.bin
printf '#!/bin/sh\necho hi\n' > src/run.sh && chmod +x src/run.sh
ln -s src/blob.bin link && ln -s missing dangling
printf 'uni' > 'ünï côdé.txt'
printf 'nl' > "$(printf 'new\nline.txt')"
printf 'bad' > "$(printf 'bad-\377\376.bin')"
printf 'deep' > src/deep/file.txt
echo 'ignored output' > build/out.o
"""

CHANGE = r"""
set -e
rm -f src/blob.bin "$(printf 'new\nline.txt')" link
rm -rf empty
printf 'changed\000' > src/deep/file.txt
chmod -x src/run.sh && chmod +x tracked.txt
ln -sf tracked.txt dangling
printf 'added' > "$(printf 'added\nname-\377')" && mkdir -p made/since && echo x > made/x
printf '\377\376' > 'ünï côdé.txt' && mkdir -p only-empty/a/b
"""

#: What the user's repository looks like, to check it is untouched: HEAD, the index's
#: entries, the branches, the stash, and every file of .git except the logs of git status.
USER_GIT = r"""
git rev-parse HEAD; git ls-files -s; git branch --format='%(refname) %(objectname)'
git stash list --format='%H %s'; git status --porcelain=v1 -z | od -c | tail -n 3
find .git -type f ! -name index -exec cksum {} + | sort
"""


@pytest.fixture(autouse=True)
def packer_always(monkeypatch: pytest.MonkeyPatch) -> None:
    """These trees are small: the packer hashes them all the same (it takes any large
    change; tests/local/test_snapshot_packer.py holds it to git), so it runs on every
    backend here. Small changes are git's by default; the toolbox and MCP tests take that
    path."""
    monkeypatch.setattr(store, "PACKER_FILES", 1)


@pytest.fixture
async def gsandbox(backend: ModuleType, provider: IsolatedSandboxProvider,
                   ) -> AsyncIterator[Sandbox]:
    """A fresh sandbox with sh, git and python3 (docker: the toolchain image)."""
    chosen = backend.toolchain_provider() if backend.NAME == "docker" else provider
    async with chosen.session() as made:
        yield made


async def tree_hash(sandbox: Sandbox, skip_git: bool = True) -> str:
    result = await sandbox.exec(
        ["python3", "-c", TREE_HASH, sandbox.worktree, "skip-git" if skip_git else "-"],
        check=True,
    )
    return result.stdout.strip()


async def user_git(sandbox: Sandbox) -> str:
    return (await sandbox.exec(USER_GIT, check=True)).stdout


async def test_restore_puts_the_tree_back_byte_for_byte(gsandbox: Sandbox) -> None:
    await gsandbox.exec(SETUP, check=True)
    before, repo = await tree_hash(gsandbox), await user_git(gsandbox)
    snap = await gsandbox.snapshot(label="before\nchanges")
    assert await user_git(gsandbox) == repo
    assert snap.label == "before\nchanges" and snap.files >= 9 and snap.size > 0
    await gsandbox.exec(CHANGE, check=True)
    assert await tree_hash(gsandbox) != before
    changed_repo = await user_git(gsandbox)
    await gsandbox.restore(snap)
    assert await tree_hash(gsandbox) == before
    assert changed_repo != repo  # the work tree changed under the user's repository too
    assert await user_git(gsandbox) == repo
    # Ignored build output was neither recorded nor touched; the empty dirs are back.
    kept = await gsandbox.exec("cat build/out.o && test -d empty/inner && "
                               "test ! -e made && test ! -e only-empty", check=True)
    assert kept.stdout == "ignored output\n"
    listed = await gsandbox.snapshots()
    assert [(s.id, s.label, s.files, s.size) for s in listed] == [
        (snap.id, snap.label, snap.files, snap.size)
    ]


async def test_diff_matches_git_diff_no_index(gsandbox: Sandbox) -> None:
    # The two trees are copied under .sandlot (left out of snapshots; /tmp is private to each
    # command under bubblewrap), without the user's .git and the ignored build output.
    copy = ("rm -rf .sandlot/t/{0} && mkdir -p .sandlot/t && tar cf - --exclude=./.git "
            "--exclude=./.sandlot --exclude=./build . | (mkdir .sandlot/t/{0} && cd .sandlot/t/{0} "
            "&& tar xf -)")
    await gsandbox.exec(SETUP, check=True)
    snap = await gsandbox.snapshot()
    await gsandbox.exec(copy.format("a"), check=True)
    await gsandbox.exec(CHANGE, check=True)
    diff = await gsandbox.snapshot_diff(snap)
    await gsandbox.exec(copy.format("b"), check=True)
    # The reference: git diff --no-index of the two trees, by git's own rules.
    ref = await gsandbox.exec(
        "cd .sandlot/t && git diff --no-index --no-renames --name-status -z a b | base64 | "
        "tr -d '\\n'; exit 0", check=True)
    fields = base64.b64decode(ref.stdout.strip()).split(b"\0")
    expected = {(status.decode()[0], path.split(b"/", 1)[1])
                for status, path in zip(fields[0::2], fields[1::2], strict=False) if path}
    assert len(expected) >= 8
    assert {(c.status, c.raw_path) for c in diff.changes} == expected
    assert b"added\nname-\xff" in {c.raw_path for c in diff.changes}
    assert {NL.encode(), BAD} & {c.raw_path for c in diff.changes} == {NL.encode()}
    # The patch turns the snapshot's tree into the tree now.
    await gsandbox.exec(["sh", "-c", "cat > .sandlot/t/p.patch"], stdin=diff.patch, check=True)
    applied = await gsandbox.exec(
        # (the ceiling keeps git apply from taking the user's repository for its own)
        'cd .sandlot/t && GIT_CEILING_DIRECTORIES="$PWD" && export GIT_CEILING_DIRECTORIES && '
        "cd a && git apply --binary ../p.patch && cd .. && "
        "git diff --no-index --quiet a b && echo same")
    assert applied.stdout.strip() == "same", applied.stderr


async def test_fifty_snapshots_then_the_first_restored(gsandbox: Sandbox) -> None:
    await gsandbox.exec(SETUP, check=True)
    first_hash = await tree_hash(gsandbox)
    first = await gsandbox.snapshot(label="0")
    for n in range(1, 50):
        await gsandbox.exec(f"echo {n} >> tracked.txt && printf '{n}' > f{n}", check=True)
        await gsandbox.snapshot(label=str(n))
    listed = await gsandbox.snapshots()
    assert [s.label for s in listed] == [str(n) for n in range(50)]
    await gsandbox.restore(first.id)
    assert await tree_hash(gsandbox) == first_hash


async def test_what_a_killed_snapshot_left_does_not_stop_the_next(
    gsandbox: Sandbox, caplog: pytest.LogCaptureFixture
) -> None:
    """A snapshot, diff or restore cancelled mid-way is killed with its git and packer: their
    index lock and temporary pack stay in the store. The next call removes them (it holds the
    store's flock, so nothing else can be writing them) instead of failing on the lock, and
    the packer hashes the files as before (no fallback to git is logged)."""
    await gsandbox.exec("mkdir d && echo one > d/a && echo two > b", check=True)
    first = await gsandbox.snapshot()
    store = f"{gsandbox.worktree}/.sandlot/snapshots"
    left = (f"ls {store}/idx | grep -c '[.]lock$'; "
            f"ls {store}/git/objects/pack | grep -c '^tmp_'; true")
    await gsandbox.exec(f"for f in {store}/idx/*; do : > \"$f.lock\"; done && "
                        f"head -c 5000 /dev/urandom > {store}/git/objects/pack/tmp_pack_sandlot_7 "
                        f"&& : > {store}/git/objects/pack/tmp_idx_sandlot_7", check=True)
    assert (await gsandbox.exec(left)).stdout.split() == ["1", "2"]
    await gsandbox.exec("echo changed > d/a && echo new > c", check=True)
    with caplog.at_level(logging.WARNING, logger="sandlot.snapshots"):
        second = await gsandbox.snapshot()
    assert not caplog.records
    assert (await gsandbox.exec(left)).stdout.split() == ["0", "0"]
    assert second.files == 3
    await gsandbox.exec(f"for f in {store}/idx/*; do : > \"$f.lock\"; done", check=True)
    assert [c.path for c in (await gsandbox.snapshot_diff(first)).changes] == ["c", "d/a"]
    await gsandbox.exec(f"for f in {store}/idx/*; do : > \"$f.lock\"; done", check=True)
    await gsandbox.restore(first)
    assert (await gsandbox.exec("cat d/a b; ls", check=True)).stdout == "one\ntwo\nb\nd\n"


async def test_restore_refuses_while_a_process_works_there(gsandbox: Sandbox) -> None:
    await gsandbox.exec("echo a > a.txt", check=True)
    snap = await gsandbox.snapshot()
    writer = await gsandbox.start("while :; do echo x >> log.txt; sleep 0.05; done")
    try:
        with pytest.raises(SnapshotBusyError) as caught:
            await gsandbox.restore(snap)
        assert "force=True" in str(caught.value) and caught.value.holders
        await gsandbox.restore(snap, force=True)
    finally:
        await writer.kill()
    await gsandbox.restore(snap)
    assert (await gsandbox.exec("ls")).stdout.split() == ["a.txt"]


async def test_a_snapshot_of_another_sandbox_is_refused(
    gsandbox: Sandbox, provider: IsolatedSandboxProvider
) -> None:
    await gsandbox.exec("echo a > a.txt", check=True)
    snap = await gsandbox.snapshot()
    async with provider.session() as other:
        with pytest.raises(ForeignSnapshotError, match="restore it there"):
            await other.restore(snap)
        with pytest.raises(ForeignSnapshotError):
            await other.snapshot_diff(snap)
    with pytest.raises(SnapshotNotFoundError):
        await gsandbox.restore("0123456789ab")
