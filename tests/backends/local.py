from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sandlot

SHARED_PIDS = True


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield sandlot.local()
