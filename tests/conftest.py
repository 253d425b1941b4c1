from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Iterator
from types import ModuleType

import pytest

from sandlot import IsolatedSandboxProvider, Sandbox
from tests import backends

#: Under pytest-xdist, the tests of one heavy session resource run on one worker, so the run
#: starts one real Coder deployment and one private Docker engine, not one per worker.
_RESOURCE_GROUPS = (
    ("real-coder", re.compile(r"tests/realcoder/|\[(?:[^\]]*-)?(?:coder-)?real(?:-[^\]]*)?\]")),
    ("docker", re.compile(r"docker")),
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not getattr(config.option, "numprocesses", None):
        return
    for item in items:
        for group, pattern in _RESOURCE_GROUPS:
            if pattern.search(item.nodeid):
                item.add_marker(pytest.mark.xdist_group(group))
                break


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    # asyncssh needs asyncio; every async test and fixture shares one loop per session.
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _private_docker_engine() -> Iterator[None]:
    """Stop the private Docker engine (if a test started it) once everything else closed;
    any sandlot container still there then is a leak, and fails the run."""
    yield
    from tests import docker_engine

    leftovers = docker_engine.shutdown_shared()
    where = [f"{name} (first seen after {docker_engine.first_seen(name)})" for name in leftovers]
    assert not leftovers, f"sandlot containers left behind after the session: {where}"


@pytest.fixture(scope="module", autouse=True)
def _docker_containers_by_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Note which module each container appeared in (see _private_docker_engine)."""
    yield
    from tests import docker_engine

    docker_engine.note_containers(request.module.__name__)


@pytest.fixture(scope="session", autouse=True)
def _shared_real_coder() -> Iterator[None]:
    """Stop the session's real Coder deployment (if a test started it) once everything that
    used it has closed; anything of it still running, or a workspace left on it, fails."""
    yield
    import sys

    # Only a session that used the tier has imported it (and has anything to stop).
    shared = sys.modules.get("tests.realcoder.shared")
    if shared is not None:
        shared.stop_shared_real_coder()


@pytest.fixture(scope="session", params=backends.selected())
def backend(request: pytest.FixtureRequest) -> ModuleType:
    module = backends.load(request.param)
    module.NAME = request.param  # type: ignore[attr-defined]
    return module


@pytest.fixture(scope="session")
async def provider(backend: ModuleType) -> AsyncIterator[IsolatedSandboxProvider]:
    async with backend.provider() as made:
        yield made


#: SANDLOT_TEST_SESSION_HELPER=off runs the suites' sandboxes without the session helper (as a
#: provider's session_helper=False would): every file tool call then takes its one-command path.
SESSION_HELPER = os.environ.get("SANDLOT_TEST_SESSION_HELPER", "on") != "off"


@pytest.fixture(scope="session")
async def sandbox(provider: IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    """One sandbox per backend, shared by the tests that do not need a fresh one."""
    async with provider.session() as made:
        made._session_helper = made._session_helper and SESSION_HELPER
        yield made


@pytest.fixture
async def fresh_sandbox(provider: IsolatedSandboxProvider) -> AsyncIterator[Sandbox]:
    async with provider.session() as made:
        made._session_helper = made._session_helper and SESSION_HELPER
        yield made


@pytest.fixture
async def workdir(sandbox: Sandbox, request: pytest.FixtureRequest) -> str:
    """A directory of this test's own inside the shared sandbox."""
    import re

    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:80]
    path = f"{sandbox.worktree}/t-{name}"
    await sandbox.exec(["mkdir", "-p", path], check=True)
    return path
