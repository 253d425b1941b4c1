"""Fixtures of the live post-edit feedback tests: one sandbox per verify backend (local,
docker, the fake Coder deployment), each holding a pristine copy of every fixture project, and
a fresh copy of one per test (`cp -a` inside the sandbox: node_modules crosses once)."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest

import sandlot
from sandlot import Sandbox
from tests.helpers import require
from tests.verify import backends
from tests.verify.support import copy_fixture, tool_env


@asynccontextmanager
async def fake_coder() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    """Workspaces of the fake Coder deployment (agents on this host), with the verify tools
    on their PATH."""
    from tests.backends import coder

    async with coder.provider():  # the deployment, checked for leftovers at its end
        # The agents' own environment has no HOME of this user: rustup needs to be told.
        home = os.path.expanduser("~")
        env = {**tool_env(),
               "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", f"{home}/.rustup"),
               "CARGO_HOME": os.environ.get("CARGO_HOME", f"{home}/.cargo")}
        yield sandlot.coder(template=coder.TEMPLATE, on_close="delete", env=env,
                            **coder._ACCESS)


Factory = Callable[[], AbstractAsyncContextManager[sandlot.IsolatedSandboxProvider]]
FACTORIES: dict[str, Factory] = {
    **backends.REGISTRY,
    "coder": fake_coder,
}


def _selected() -> list[str]:
    raw = os.environ.get("SANDLOT_TEST_BACKENDS", "")
    names = [n.strip() for n in raw.split(",") if n.strip() in FACTORIES]
    return names or list(FACTORIES)


class Projects:
    """One sandbox with a pristine copy of each fixture project, copied per test."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._pristine: dict[str, str] = {}

    async def fresh(self, fixture: str) -> str:
        if fixture not in self._pristine:
            where = f"{self.sandbox.worktree}/pristine-{fixture}"
            await self.sandbox.exec(["mkdir", "-p", where], check=True)
            await copy_fixture(self.sandbox, fixture, dest=where)
            self._pristine[fixture] = where
        root = f"{self.sandbox.worktree}/t-{uuid.uuid4().hex[:8]}"
        await self.sandbox.exec(["cp", "-a", self._pristine[fixture], root], check=True)
        return root


@pytest.fixture(scope="session", params=_selected())
async def feedback_projects(request: pytest.FixtureRequest) -> AsyncIterator[Projects]:
    name: str = request.param
    preflight = backends.PREFLIGHT.get(name, backends.PREFLIGHT["local"])
    absent = preflight()
    require(not absent, f"verify tools missing for backend {name}: {', '.join(absent)}; "
            "run scripts/setup.d/40-verify-tools.sh")
    async with FACTORIES[name]() as provider, provider.session() as sandbox:
        yield Projects(sandbox)
