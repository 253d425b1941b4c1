"""Backends the contract suite runs on. Each module exposes `provider()`, an async context
manager that sets up whatever the backend needs (an engine, a fake deployment) and yields an
`IsolatedSandboxProvider`; plus `SHARED_PIDS`: whether one exec can see another's processes.

Select a subset with SANDLOT_TEST_BACKENDS=local,docker (default: all registered).
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

#: name -> module. Add a backend with one line here and one module beside this file.
REGISTRY: dict[str, str] = {
    "local": "tests.backends.local",
    "local-bwrap": "tests.backends.local_bwrap",
}


def selected() -> list[str]:
    raw = os.environ.get("SANDLOT_TEST_BACKENDS", "")
    names = [n.strip() for n in raw.split(",") if n.strip()] or list(REGISTRY)
    unknown = sorted(set(names) - set(REGISTRY))
    if unknown:
        raise ValueError(f"unknown backends in SANDLOT_TEST_BACKENDS: {unknown}; "
                         f"known: {sorted(REGISTRY)}")
    return names


def load(name: str) -> ModuleType:
    return importlib.import_module(REGISTRY[name])
