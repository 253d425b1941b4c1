"""Cancelling the creation of a bubblewrap sandbox leaves nothing (issue 35.7: 2-3 of 30
cancelled creations left their worktree and their network holder process).

Creation makes the worktree, probes bwrap, starts the holder of the sandbox's network
namespace, reads its description and probes joining it; the cancels here are spread over the
whole of it, from the first await to just after the end.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

import sandlot
from tests.helpers import eventually, host_alive, require_binary

pytestmark = pytest.mark.anyio

CREATIONS = 30


def _holders() -> list[int]:
    """Live network holders this test process started (bwrap children told to describe
    themselves on an --info-fd), and their namespaced children."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                argv = handle.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == me and b"--info-fd" in argv:
            found.append(int(name))
    return host_alive(found)


async def test_cancelled_creations_leave_no_worktree_and_no_holder(tmp_path: Path) -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    provider = sandlot.local(isolation="bwrap", root=str(tmp_path))
    before = set(_holders())  # sandboxes other tests of this process hold open
    began = time.monotonic()
    async with provider.session():
        pass
    whole = time.monotonic() - began
    created = 0
    for n in range(CREATIONS):
        sandbox = None
        with anyio.move_on_after(whole * 1.2 * n / CREATIONS):
            sandbox = await provider.create()
        if sandbox is not None:  # a creation the cancel came too late for
            created += 1
            await sandbox.close()
    assert created < CREATIONS, "no cancel landed inside a creation"

    def ours() -> list[int]:
        return [pid for pid in _holders() if pid not in before]

    def clean() -> bool:
        return not os.listdir(tmp_path) and not ours()

    try:
        await eventually(clean, within=10.0, what="no worktree and no holder left")
    except AssertionError:
        raise AssertionError(
            f"left by {CREATIONS - created} cancelled creations: worktrees "
            f"{sorted(os.listdir(tmp_path))}, holders {ours()}"
        ) from None
