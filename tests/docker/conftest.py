"""Fixtures for the docker backend's own tests, on the session's private engine."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from sandlot.backends.docker import DockerProvider, DockerSandbox
from tests import docker_engine
from tests.backends import docker as docker_backend


@pytest.fixture(scope="session")
def engine() -> docker_engine.DockerEngine:
    return docker_backend.engine()


@pytest.fixture(scope="session")
def image(engine: docker_engine.DockerEngine) -> str:
    return engine.busybox_image()


@pytest.fixture
def make(engine: docker_engine.DockerEngine) -> Callable[..., DockerProvider]:
    """A busybox provider on the private engine with the given options."""
    return docker_backend.busybox_provider


@pytest.fixture
async def opened(
    make: Callable[..., DockerProvider],
) -> AsyncIterator[Callable[..., Any]]:
    """Create sandboxes that are closed at the end of the test whatever happens."""
    made: list[DockerSandbox] = []

    async def open_one(**options: Any) -> DockerSandbox:
        sandbox = await make(**options).create()
        made.append(sandbox)
        return sandbox

    yield open_one
    for sandbox in made:
        try:
            await sandbox.close()
        except Exception:  # a test that broke the container on purpose
            await sandbox.cli.run("rm", "-f", sandbox.container_id)


@pytest.fixture
async def toolchain_opened() -> AsyncIterator[Callable[..., Any]]:
    """Create sandboxes on the toolchain image (python3 there: the session helper runs),
    closed and removed at the end of the test, their forward handover directory too."""
    made: list[DockerSandbox] = []

    async def open_one(**options: Any) -> DockerSandbox:
        box = await docker_backend.toolchain_provider(**options).create()
        assert isinstance(box, DockerSandbox)
        made.append(box)
        return box

    yield open_one
    for box in made:
        try:
            await box.close()
        finally:
            await box.cli.run("rm", "-f", box.container_id)
            if box.handover is not None:
                shutil.rmtree(box.handover.folder, ignore_errors=True)


def inspect(engine: docker_engine.DockerEngine, container: str, template: str) -> str:
    return engine.docker("container", "inspect", "--format", template, container).stdout.strip()
