"""Fixtures for the runtime-mode tests: one toolchain sandbox per backend that offers one
(tests/toolchains.py says how a backend joins)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from types import ModuleType

import pytest

from sandlot import IsolatedSandboxProvider, Sandbox
from tests import backends
from tests.backends.local import UV_BIN
from tests.helpers import require, require_binary
from tests.toolchains import provider_for, toolchain_backends


@pytest.fixture(scope="session", params=toolchain_backends())
def toolchain_backend(request: pytest.FixtureRequest) -> ModuleType:
    module = backends.load(request.param)
    module.NAME = request.param  # type: ignore[attr-defined]
    # Local sandboxes use this machine's runtimes; the docker toolchain image borrows them too.
    for binary in ("python3", "go", "node", "npm", "bash"):
        require_binary(binary, "the polyglot machine image provides it")
    require(os.path.exists(os.path.join(UV_BIN, "uv")), "uv missing: run scripts/setup.d/40-uv.sh")
    return module


@pytest.fixture(scope="session")
def toolchain_provider(toolchain_backend: ModuleType) -> IsolatedSandboxProvider:
    return provider_for(toolchain_backend.NAME)


@pytest.fixture(scope="session")
async def toolchain(toolchain_provider: IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    """A sandbox with python3, go, node, npm, bash and uv, shared by one backend's mode tests."""
    async with toolchain_provider.session() as made:
        yield made
