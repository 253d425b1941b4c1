from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sandlot

SHARED_PIDS = True


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield sandlot.local()


@asynccontextmanager
async def toolchain_provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    """Local sandboxes that also see the project's uv (scripts/setup.d/40-uv.sh)."""
    import os
    import sys

    path = os.environ.get("PATH", "")
    venv_bin = os.path.dirname(sys.executable)
    yield sandlot.local(env={"PATH": f"{venv_bin}:{path}"})
