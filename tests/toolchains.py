"""Toolchain sandboxes for the mode and server tests, on every backend that offers one.

A backend offers one by exposing `toolchain_provider(**options)` in its tests/backends module
(see tests/backends/__init__.py). What these tests need on top of a toolchain -- `uv` on PATH
for the python installer, and a network that reaches PyPI and npm -- is one entry in
`MODE_OPTIONS` below (local sandboxes have both already).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from typing import Any

from sandlot import IsolatedSandboxProvider
from tests import backends
from tests.backends.local import UV_BIN

#: Host environment that points TLS clients (uv, pip, npm) at this machine's CA bundle; the
#: toolchain container sees the host's /etc, so the same paths hold there.
CA_VARIABLES = ("SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "PIP_CERT",
                "REQUESTS_CA_BUNDLE")  # fmt: skip


def _host(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def _docker_options() -> dict[str, Any]:
    from tests.backends.docker import TOOLCHAIN_ENV

    cache = _host(["go", "env", "GOCACHE"])
    # The interpreter's own bin directory, ahead of pyenv's shims: a shim runs `pyenv rehash`
    # after `python3 -m pip`, which fails on the read-only pyenv the container borrows.
    where = "import os, sys; print(os.path.dirname(os.path.realpath(sys.executable)))"
    python_bin = _host(["python3", "-c", where])
    os.makedirs(cache, exist_ok=True)
    ca = {k: os.environ[k] for k in CA_VARIABLES if os.environ.get(k)}
    return {
        # The private engine has no bridge: host networking reaches the registries.
        "network": "host",
        # docker-init cannot be bound over the read-only host /usr (/sbin -> usr/sbin there).
        "init": False,
        "mounts": [
            {"source": UV_BIN, "target": "/opt/sandlot-uv", "read_only": True},
            # The host's Go build cache: a fresh container would rebuild the standard library
            # (minutes on this machine) before the first `go build`.
            {"source": cache, "target": "/root/.cache/go-build", "read_only": False},
        ],
        "env": {
            **TOOLCHAIN_ENV,
            **ca,
            "PATH": f"/opt/sandlot-uv:{python_bin}:{TOOLCHAIN_ENV['PATH']}",
            "GOCACHE": "/root/.cache/go-build",
        },
    }


#: backend name -> extra options for its toolchain provider in the mode tests.
MODE_OPTIONS: dict[str, Callable[[], dict[str, Any]]] = {
    "docker": _docker_options,
}


def toolchain_backends() -> list[str]:
    return [n for n in backends.selected() if hasattr(backends.load(n), "toolchain_provider")]


def provider_for(name: str) -> IsolatedSandboxProvider:
    """The toolchain provider of backend `name`, with what the mode tests add."""
    options = MODE_OPTIONS.get(name, dict)()
    provider: IsolatedSandboxProvider = backends.load(name).toolchain_provider(**options)
    return provider
