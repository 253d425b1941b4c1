"""Fixtures of the live verify tests: one provider per backend, and one sandbox per fixture
project shared by the tests that only read it (copying node_modules once, not per test)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import sandlot
from sandlot import Sandbox

from . import backends
from .support import copy_fixture


@pytest.fixture(scope="session", params=backends.selected())
async def verify_provider(
    request: pytest.FixtureRequest,
) -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    async with backends.opened(request.param) as provider:
        yield provider


class Projects:
    """Sandboxes holding one fixture project each, made on first use, closed at the end."""

    def __init__(self, provider: sandlot.IsolatedSandboxProvider) -> None:
        self.provider = provider
        self._made: dict[str, Sandbox] = {}

    async def get(self, fixture: str) -> Sandbox:
        if fixture not in self._made:
            sandbox = await self.provider.create()
            try:
                await copy_fixture(sandbox, fixture)
            except BaseException:
                # A sandbox whose copy failed is not kept: the next test that asks for this
                # project gets a new one, so one failure stays one failure.
                await sandbox.close()
                raise
            self._made[fixture] = sandbox
        return self._made[fixture]

    async def close(self) -> None:
        for sandbox in self._made.values():
            await sandbox.close()


@pytest.fixture(scope="session")
async def projects(verify_provider: sandlot.IsolatedSandboxProvider) -> AsyncIterator[Projects]:
    made = Projects(verify_provider)
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def fresh(verify_provider: sandlot.IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    """A sandbox of this test's own (for tests that change the project)."""
    async with verify_provider.session() as sandbox:
        yield sandbox
