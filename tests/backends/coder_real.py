"""The coder backend on a REAL Coder deployment (tests/realcoder): part of the default run.

It uses the session's one deployment (tests/realcoder/shared.py), which needs the release
built by scripts/build-coder.sh (or SANDLOT_CODER_BINARY plus SANDLOT_CODER_PROTO_ROOT) and
PostgreSQL; without them it is skipped locally and fails when CI=true
(`require_real_coder`). Select it alone with SANDLOT_TEST_BACKENDS=coder-real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

import sandlot

# Every agent runs as a process on this machine, so one command sees the others' processes.
SHARED_PIDS = True


#: How the session's provider reaches its deployment (for `attach`).
_ACCESS: dict[str, str] = {}


def attach(sandbox: sandlot.Sandbox) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (as another program would attach)."""
    return sandlot.coder(workspace=sandbox.name, on_close="leave", workdir=sandbox.worktree,
                         **_ACCESS)


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    from tests.realcoder.shared import shared_real_coder

    coder = await anyio.to_thread.run_sync(shared_real_coder)
    before = {ws["name"] for ws in await anyio.to_thread.run_sync(coder.list_workspaces)}
    _ACCESS.update(coder.access())
    yield sandlot.coder(template=coder.template_single, on_close="delete", **_ACCESS)
    after = {ws["name"] for ws in await anyio.to_thread.run_sync(coder.list_workspaces)}
    assert not after - before, f"workspaces left behind by the contract suite: {after - before}"
