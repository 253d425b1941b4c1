"""The session tests' sandbox: the shared one, except on docker, whose shared sandbox is the
busybox image (no python3, so no helper): there a toolchain container (the host's python3)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType

import pytest

from sandlot import IsolatedSandboxProvider, Sandbox


@pytest.fixture(scope="module")
async def sandbox(backend: ModuleType, provider: IsolatedSandboxProvider
                  ) -> AsyncIterator[Sandbox]:
    made_by = backend.toolchain_provider() if backend.NAME == "docker" else provider
    async with made_by.session() as made:
        yield made
