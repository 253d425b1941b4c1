from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sandlot
from tests.helpers import require_binary

# Every command gets its own PID namespace under bubblewrap.
SHARED_PIDS = False


def attach(sandbox: sandlot.Sandbox) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (as another program would attach)."""
    return sandlot.local(attach=sandbox.worktree, on_close="leave", isolation="bwrap")


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    require_binary("bwrap", "apt-get install bubblewrap")
    yield sandlot.local(isolation="bwrap")
