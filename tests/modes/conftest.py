"""Fixtures for the runtime-mode tests: one toolchain sandbox per backend that offers one.

A backend joins these tests by exposing `toolchain_provider()` in its tests/backends module
(see tests/backends/__init__.py); nothing here needs to change.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType

import pytest

from sandlot import IsolatedSandboxProvider, Sandbox
from tests import backends
from tests.helpers import require_binary


def toolchain_backends() -> list[str]:
    return [n for n in backends.selected() if hasattr(backends.load(n), "toolchain_provider")]


@pytest.fixture(scope="session", params=toolchain_backends())
def toolchain_backend(request: pytest.FixtureRequest) -> ModuleType:
    module = backends.load(request.param)
    module.NAME = request.param  # type: ignore[attr-defined]
    if request.param.startswith("local"):
        # The local toolchain is this machine's: each runtime must be installed here.
        for binary in ("python3", "go", "node", "npm", "bash"):
            require_binary(binary, "the polyglot machine image provides it")
    return module


@pytest.fixture(scope="session")
async def toolchain_provider(
    toolchain_backend: ModuleType,
) -> AsyncIterator[IsolatedSandboxProvider]:
    async with toolchain_backend.toolchain_provider() as made:
        yield made


@pytest.fixture(scope="session")
async def toolchain(toolchain_provider: IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    """A sandbox with python3, go, node and bash, shared by the mode tests of one backend."""
    async with toolchain_provider.session() as made:
        yield made
