"""Backends the contract suite runs on. Each module exposes `provider()`, an async context
manager that sets up whatever the backend needs (an engine, a fake deployment) and yields an
`IsolatedSandboxProvider`; plus `SHARED_PIDS`: whether one exec can see another's processes.

Select a subset with SANDLOT_TEST_BACKENDS=local,docker (default: all registered except the
opt-in ones in OPT_IN, which run only when named). `coder-real` runs by default: it skips
locally without the cached coder build and fails when CI=true (tests/realcoder/shared.py).

A backend module may also expose `toolchain_provider(**options) -> IsolatedSandboxProvider`:
sandboxes with python3 (with pip), go, node with npm and bash on PATH. tests/modes runs on every
selected backend that has one; what the mode tests add on top (uv, a network to reach PyPI and
npm) is one entry in tests/toolchains.py::MODE_OPTIONS.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: name -> module. Add a backend with one line here and one module beside this file.
REGISTRY: dict[str, str] = {
    "local": "tests.backends.local",
    "local-bwrap": "tests.backends.local_bwrap",
    "docker": "tests.backends.docker",
    "docker-helper": "tests.backends.docker_helper",
    "coder": "tests.backends.coder",
    "coder-real": "tests.backends.coder_real",
}

#: Registered, but run only when named in SANDLOT_TEST_BACKENDS (heavy infrastructure).
OPT_IN: frozenset[str] = frozenset()


def selected() -> list[str]:
    raw = os.environ.get("SANDLOT_TEST_BACKENDS", "")
    names = [n.strip() for n in raw.split(",") if n.strip()] or [
        name for name in REGISTRY if name not in OPT_IN
    ]
    unknown = sorted(set(names) - set(REGISTRY))
    if unknown:
        raise ValueError(f"unknown backends in SANDLOT_TEST_BACKENDS: {unknown}; "
                         f"known: {sorted(REGISTRY)}")
    return names


def load(name: str) -> ModuleType:
    return importlib.import_module(REGISTRY[name])
