"""Property: the two containment layers together never accept a path that leads outside.

On a local sandbox the host kernel is the oracle: for generated paths through a tree full of
symlinks (inside, outside, into the sibling workspace, chains, dangling), whenever the pure
resolver and the sandbox-side check both accept, the host's own `realpath` of the path lies in
the root and equals what the check resolved; whenever the check refuses, it lies outside.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sandlot
from sandlot import Sandbox
from sandlot.errors import PathOutsideWorkspaceError
from sandlot.tools import scripts
from sandlot.tools.runner import run_script
from sandlot.workspaces import contain_path

TREE = """
mkdir -p ws/root/a/b ws/root/c ws/other/x outside/d
ln -s ../c ws/root/a/up-c             # inside, relative
ln -s /etc ws/root/etc                 # out, absolute
ln -s ../../../outside ws/root/a/out   # out, relative
ln -s ../../outside ws/root/a/gone     # dangling (ws/outside does not exist), outside
ln -s ../other ws/root/sib             # into the sibling workspace
ln -s a/out ws/root/chain-out          # chain that ends outside
ln -s a/up-c ws/root/chain-in          # chain that ends inside
ln -s ../missing ws/root/dangle-out    # dangling, outside
ln -s c/new ws/root/dangle-in          # dangling, inside
ln -s . ws/root/c/self                 # loop-free self reference
ln -s ../.. ws/root/a/b/top            # back to the root itself
"""


@pytest.fixture(scope="module")
def world() -> Iterator[tuple[BlockingPortal, Sandbox, str]]:
    with start_blocking_portal(backend="asyncio") as portal:
        provider = sandlot.local()
        sandbox = portal.call(provider.create)
        try:
            portal.call(lambda: sandbox.exec(TREE, check=True))
            yield portal, sandbox, f"{sandbox.worktree}/ws/root"
        finally:
            portal.call(sandbox.close)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root + "/")


_COMPONENT = st.sampled_from(
    ["a", "b", "c", "up-c", "etc", "out", "gone", "sib", "chain-out", "chain-in", "dangle-out",
     "dangle-in", "self", "top", "new", "d", "x", "..", "."]
)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(_COMPONENT, min_size=1, max_size=6))
def test_accepted_paths_really_are_inside(
    world: tuple[BlockingPortal, Sandbox, str], parts: list[str]
) -> None:
    portal, sandbox, root = world
    try:
        target = contain_path(root, "/".join(parts))
    except PathOutsideWorkspaceError:
        return
    result = portal.call(lambda: run_script(sandbox, scripts.RESOLVE, [root, target],
                                            name="resolve"))
    oracle = os.path.realpath(target)
    if result.exit_code == 0:
        assert result.stdout.decode() == oracle
        assert _inside(oracle, root)
    else:
        assert result.exit_code == scripts.Exit.ESCAPES, result.stderr
        assert not _inside(oracle, root)
