"""The docker backend on a private Docker engine the test session starts itself.

Other test modules reuse the engine and images from here:

* `engine()` -- the session's `DockerEngine` (tests/docker_engine.py), started on first use.
* `busybox_provider(**options)` / `toolchain_provider(**options)` -- providers on that engine;
  the toolchain one mounts the host's /usr, /etc and toolchain homes read-only and sets
  `TOOLCHAIN_ENV` (go, cargo, node, python as on the host).
* `HAS_TOOLCHAINS` -- whether the host has the toolchains the toolchain image lends.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import sandlot
from sandlot.backends.docker import DockerProvider
from tests import docker_engine
from tests.helpers import require

# Every exec is a process in the container's one PID namespace.
SHARED_PIDS = True

#: The toolchains the toolchain image borrows from the host are all there.
HAS_TOOLCHAINS = all(
    os.path.exists(p)
    for p in ("/usr/local/go/bin/go", "/root/.cargo/bin/cargo", "/usr/bin/node", "/root/.pyenv")
)

TOOLCHAIN_ENV = docker_engine.TOOLCHAIN_ENV


def engine() -> docker_engine.DockerEngine:
    """The shared private engine; skips (locally) or fails (CI) when it cannot run here."""
    missing = docker_engine.missing_components()
    require(not missing, f"docker engine parts missing: {missing}; {docker_engine.INSTALL_HINT}")
    try:
        return docker_engine.shared()
    except docker_engine.EngineUnavailable as exc:
        require(False, f"the private Docker engine does not start here: {exc}")
        raise


def busybox_provider(**options: Any) -> DockerProvider:
    eng = engine()
    options.setdefault("on_close", "delete")
    image = None if "attach" in options else eng.busybox_image()
    return sandlot.docker(image, docker_host=eng.host, **options)


def toolchain_provider(**options: Any) -> DockerProvider:
    eng = engine()
    options.setdefault("on_close", "delete")
    options.setdefault("env", dict(TOOLCHAIN_ENV))
    mounts = [*eng.toolchain_mounts(), *options.pop("mounts", [])]
    return sandlot.docker(eng.toolchain_image(), docker_host=eng.host, mounts=mounts, **options)


def attach(sandbox: sandlot.Sandbox) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (as another program would attach)."""
    return busybox_provider(attach=sandbox.name, on_close="leave", workdir=sandbox.worktree)


#: SANDLOT_TEST_DOCKER_IMAGE=toolchain runs the suites on the toolchain image (python3 there, so
#: the toolbox's race-free helper and its session helper run) instead of busybox (no python3).
IMAGE = os.environ.get("SANDLOT_TEST_DOCKER_IMAGE", "busybox")


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield toolchain_provider() if IMAGE == "toolchain" else busybox_provider()
