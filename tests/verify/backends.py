"""Backends the live verify tests run on -- the same test bodies on each.

A backend here is an async context manager yielding a provider whose sandboxes can run every
verify tool: go, cargo (+ clippy), node/npm, python, and golangci-lint, ruff, mypy and pytest on
PATH (versions: scripts/setup.d/40-verify-tools.sh). The fixtures are copied in with
`copy_in`, node_modules included, so a remote sandbox needs no registry access.

Adding a remote backend (docker, coder fake) is ONE entry in REGISTRY: a function building its
provider with an image / template that carries those tools. Select with
SANDLOT_VERIFY_BACKENDS=local,docker (default: every registered backend).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import sandlot

from .support import missing_tools, tool_env

BackendFactory = Callable[[], AbstractAsyncContextManager[sandlot.IsolatedSandboxProvider]]


@asynccontextmanager
async def local() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield sandlot.local(env=tool_env())


#: name -> factory. The lead plugs the remote backend in here.
REGISTRY: dict[str, BackendFactory] = {
    "local": local,
}

#: What each backend lacks, checked before its tests run (local: the host's tools).
PREFLIGHT: dict[str, Callable[[], list[str]]] = {
    "local": missing_tools,
}


def selected() -> list[str]:
    raw = os.environ.get("SANDLOT_VERIFY_BACKENDS", "")
    names = [n.strip() for n in raw.split(",") if n.strip()] or list(REGISTRY)
    unknown = sorted(set(names) - set(REGISTRY))
    if unknown:
        raise ValueError(
            f"unknown backends in SANDLOT_VERIFY_BACKENDS: {unknown}; known: {sorted(REGISTRY)}"
        )
    return names
