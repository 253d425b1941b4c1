from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import sandlot

SHARED_PIDS = True

#: The project's uv, alone in its directory (scripts/setup.d/40-uv.sh).
UV_BIN = str(Path(__file__).resolve().parents[2] / ".tools" / "uv" / "bin")


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    yield sandlot.local()


def attach(sandbox: sandlot.Sandbox) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (as another program would attach)."""
    return sandlot.local(attach=sandbox.worktree, on_close="leave")


def toolchain_provider(**options: Any) -> sandlot.IsolatedSandboxProvider:
    """Local sandboxes that also have the project's uv on PATH."""
    env = {"PATH": f"{UV_BIN}:{os.environ.get('PATH', '')}", **options.pop("env", {})}
    return sandlot.local(env=env, **options)
