"""bubblewrap is a boundary for root too (issue 35.2): run as root, a command kept every
capability (`CapEff: 000001fffeffffff`), so `mount -o remount,rw /` succeeded and the command
then wrote host paths. Commands now run with no capability, in a user namespace, and the
host's file systems stay unwritable whatever the command does.

The attacks are written as an attacker would run them; each must leave no file on the host.
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import sandlot
from sandlot import Sandbox
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio


@pytest.fixture
def host_dir() -> Iterator[Path]:
    """A host directory outside every sandbox (not under /tmp: bwrap gives a private /tmp)."""
    made = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="sandlot-boundary-"))
    yield made
    shutil.rmtree(made)


async def _cap_eff(sandbox: Sandbox) -> str:
    result = await sandbox.exec("grep CapEff /proc/self/status", check=True)
    return result.stdout.split()[1]


async def test_commands_have_no_capabilities() -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    async with sandlot.local(isolation="bwrap").session() as sandbox:
        assert int(await _cap_eff(sandbox), 16) == 0
        # Nor do the other ways a command starts: in the background, and wired to streams.
        process = await sandbox.start("grep -E 'Cap(Eff|Prm|Inh|Amb)' /proc/self/status")
        background = await process.wait()
        assert [int(line.split()[1], 16) for line in background.stdout.splitlines()] == [0] * 4
        out = io.BytesIO()
        code = await sandbox.interactive(
            ["sh", "-c", "grep CapEff /proc/self/status"],
            stdin=io.BytesIO(b""), stdout=out, stderr=io.BytesIO(), tty=False,
        )
        assert code == 0
        assert int(out.getvalue().split()[1], 16) == 0


ATTACKS = {
    "remount the root read-write": "mount -o remount,rw / && echo pwned > {target}",
    "remount the target's mount read-write": (
        "mount -o remount,rw,bind {dir} && echo pwned > {target}"
    ),
    "mount over the directory": "mount -t tmpfs none {dir} 2>&1; echo pwned > {target}",
    "a user namespace of its own": (
        "unshare -Urm sh -c 'mount -o remount,rw / && echo pwned > {target}'"
    ),
    "bind a writable copy over it": (
        "mkdir -p w && mount --bind w {dir} && echo pwned > {target}"
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
async def test_root_cannot_write_the_host(host_dir: Path, attack: str) -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    target = host_dir / f"written-{uuid.uuid4().hex}"
    line = ATTACKS[attack].format(dir=host_dir, target=target)
    async with sandlot.local(isolation="bwrap").session() as sandbox:
        result = await sandbox.exec(line)
        # The sandbox's own view, too: whatever the mount did, the host path is unchanged.
        again = await sandbox.exec(f"echo pwned > {target}")
    assert not target.exists(), f"{attack}: {result.stdout}{result.stderr}"
    assert again.exit_code != 0
    assert os.listdir(host_dir) == []


async def test_the_worktree_stays_writable_and_copies_work(tmp_path: Path) -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    # Files of another owner: a root without CAP_CHOWN cannot hand them that owner, so the
    # copy gives them to the sandbox's user instead of failing.
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "sub" / "f.txt").write_text("theirs")
    os.chown(tree / "sub" / "f.txt", 1000, 1000)
    os.chmod(tree / "sub" / "f.txt", 0o640)
    async with sandlot.local(isolation="bwrap").session() as sandbox:
        await sandbox.copy_in(tree, f"{sandbox.worktree}/in")
        got = await sandbox.exec("cat in/sub/f.txt && echo more >> in/sub/f.txt", check=True)
        assert got.stdout == "theirs"
        mode = await sandbox.exec("stat -c %a in/sub/f.txt", check=True)
        assert mode.stdout.strip() == "640"
        await sandbox.copy_out(f"{sandbox.worktree}/in", tmp_path / "back")
        assert (tmp_path / "back" / "sub" / "f.txt").read_text() == "theirsmore\n"
