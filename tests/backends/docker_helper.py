"""The docker backend with its session helper on (adr/0043): a container with python3 (the
toolchain image, the host's /usr lent read-only), so commands and forwards go over the helper
rather than one `docker exec` each. `docker` (busybox, no python3) runs the same suite on the
`docker exec` path."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sandlot
from tests.backends import docker

SHARED_PIDS = True


def attach(sandbox: sandlot.Sandbox) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (as another program would attach)."""
    return docker.busybox_provider(attach=sandbox.name, on_close="leave",
                                   workdir=sandbox.worktree)


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield docker.toolchain_provider(session_helper=True)
