"""Backends the live verify tests run on -- the same test bodies on each.

A backend here is an async context manager yielding a provider whose sandboxes can run every
verify tool: go, cargo (+ clippy), node/npm, python, and golangci-lint, ruff, mypy and pytest on
PATH (versions: scripts/setup.d/40-verify-tools.sh). The fixtures are copied in with
`copy_in`, node_modules included, so a remote sandbox needs no registry access.

Adding a remote backend (docker, coder fake) is ONE entry in REGISTRY: a function building its
provider with an image / template that carries those tools. Select with
SANDLOT_VERIFY_BACKENDS=local,docker (default: those of SANDLOT_TEST_BACKENDS registered
here, else all). The docker entry lends the host's toolchains read-only and shares the host's
Go, golangci-lint and cargo build caches, so a container does not rebuild the world.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import sandlot
from tests.helpers import require

from .support import CARGO_TARGET, TOOLS, missing_tools, tool_env

#: A backend's provider; keyword arguments are further options of its factory (a test that
#: needs one more, e.g. docker's `security_opt`).
BackendFactory = Callable[..., AbstractAsyncContextManager[sandlot.IsolatedSandboxProvider]]


@asynccontextmanager
async def local(**options: Any) -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield sandlot.local(env=tool_env(), **options)


@asynccontextmanager
async def docker(**options: Any) -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    """Containers on the test session's private Docker engine, lent the host's toolchains
    (read-only /usr, /etc, ~/.cargo, ~/.rustup, ~/.pyenv, ~/go) and the verify tools."""
    from tests.backends import docker as docker_backend

    base = docker_backend.TOOLCHAIN_ENV
    env = {
        **base,
        **{k: v for k, v in tool_env().items() if k not in ("PATH", "CARGO_TARGET_DIR")},
        "PATH": f"{TOOLS / 'bin'}:{base['PATH']}",
        # The lent homes are read-only: cargo and go write their caches inside the container.
        "CARGO_HOME": "/tmp/cargo-home",
        "RUSTUP_HOME": "/root/.rustup",
        "CARGO_TARGET_DIR": str(CARGO_TARGET),
        "GOCACHE": "/gocache",
        "GOLANGCI_LINT_CACHE": "/golangci-cache",
        "GOFLAGS": "-buildvcs=false -mod=mod",
        "npm_config_cache": "/tmp/npm-cache",
        "npm_config_update_notifier": "false",
    }
    # Build caches are shared with the host (writable): without them every container would
    # compile Go's standard library from scratch (minutes, not seconds).
    CARGO_TARGET.mkdir(parents=True, exist_ok=True)
    mounts = [
        {"source": str(TOOLS), "target": str(TOOLS), "read_only": True},
        {"source": _go_cache(), "target": "/gocache", "read_only": False},
        {"source": _golangci_cache(), "target": "/golangci-cache", "read_only": False},
        {"source": str(CARGO_TARGET), "target": str(CARGO_TARGET), "read_only": False},
    ]
    yield docker_backend.toolchain_provider(env=env, mounts=mounts, init=False, **options)


def _go_cache() -> str:
    """The host's Go build cache (content-addressed, safe to share)."""
    import subprocess

    done = subprocess.run(["go", "env", "GOCACHE"], capture_output=True, text=True, check=True)
    os.makedirs(done.stdout.strip(), exist_ok=True)
    return done.stdout.strip()


def _golangci_cache() -> str:
    path = os.path.join(os.path.expanduser("~"), ".cache", "golangci-lint")
    os.makedirs(path, exist_ok=True)
    return path


def _docker_preflight() -> list[str]:
    from tests.backends import docker as docker_backend

    absent = missing_tools()
    if not docker_backend.HAS_TOOLCHAINS:
        absent.append("host toolchains for the docker toolchain image")
    return absent


#: name -> factory: the same live tests run on each. A further remote backend is one entry.
REGISTRY: dict[str, BackendFactory] = {
    "local": local,
    "docker": docker,
}

#: What each backend lacks, checked before its tests run (local: the host's tools).
PREFLIGHT: dict[str, Callable[[], list[str]]] = {
    "local": missing_tools,
    "docker": _docker_preflight,
}


@asynccontextmanager
async def opened(name: str, **options: Any) -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    """Backend `name`'s provider (with `options` added), once its preflight found nothing
    missing: else the test skips (locally) or fails (CI)."""
    preflight = PREFLIGHT.get(name)
    if preflight is not None:
        absent = preflight()
        require(not absent, f"verify tools missing for backend {name}: {', '.join(absent)}; "
                "run scripts/setup.d/40-verify-tools.sh")
    async with REGISTRY[name](**options) as provider:
        yield provider


def selected() -> list[str]:
    """SANDLOT_VERIFY_BACKENDS, else the registered ones among SANDLOT_TEST_BACKENDS, else all."""
    raw = os.environ.get("SANDLOT_VERIFY_BACKENDS", "")
    names = [n.strip() for n in raw.split(",") if n.strip()]
    if not names:
        general = [n.strip() for n in os.environ.get("SANDLOT_TEST_BACKENDS", "").split(",")]
        names = [n for n in general if n in REGISTRY] or list(REGISTRY)
    unknown = sorted(set(names) - set(REGISTRY))
    if unknown:
        raise ValueError(
            f"unknown backends in SANDLOT_VERIFY_BACKENDS: {unknown}; known: {sorted(REGISTRY)}"
        )
    return names
