"""The ONE real Coder deployment of a test session, shared by every test that needs it.

Starting PostgreSQL + `coder server` + templates costs ~20-30 s, so the contract suite
(tests/backends/coder_real.py), the coder-backend tests (tests/coder, `deployment[real]`),
the tier's own tests (tests/realcoder, `real_coder`) and the dogfood run all take it from
`shared_real_coder()`: started on first use, stopped once by `stop_shared_real_coder()`,
which the root conftest calls when the session ends (after every fixture that used it).

Whether the tier runs is decided in `require_real_coder()`: it runs when the cached binary
from scripts/build-coder.sh and PostgreSQL exist; without them it is skipped locally and
FAILS when CI=true (tests/helpers.py::require).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from tests.helpers import require

from .harness import BUILD_SCRIPT, RealCoder, cache_dir, cached_binary, pinned_version
from .postgres import find_pg_bin

_lock = threading.Lock()
_deployment: RealCoder | None = None
# A start that failed is not retried by every later test (each try can take minutes):
# they all fail at once with the first error.
_start_error: str | None = None


def require_real_coder() -> Path:
    """The real `coder` binary, or skip (locally) / fail (CI) saying how to get it."""
    binary = cached_binary()
    require(
        binary is not None,
        f"real coder {pinned_version()} not built: run {BUILD_SCRIPT} "
        f"(caches it in {cache_dir()}; a fresh build takes 6-35 min on 2 cores)",
    )
    require(find_pg_bin() is not None, "PostgreSQL not installed: apt-get install postgresql")
    assert binary is not None
    return binary


def shared_real_coder() -> RealCoder:
    """The session's deployment, started on the first call (from any thread)."""
    global _deployment, _start_error
    binary = require_real_coder()
    with _lock:
        if _start_error is not None:
            pytest.fail(f"the real Coder deployment did not start: {_start_error}", pytrace=False)
        if _deployment is None:
            made = RealCoder(binary)
            try:
                # start() runs on the harness's own thread, so the servers outlive the
                # (worker) thread that asked first.
                made.start()
            except Exception as exc:
                _start_error = f"{type(exc).__name__}: {exc}"
                raise
            _deployment = made
        return _deployment


def started() -> bool:
    return _deployment is not None


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def stop_shared_real_coder() -> None:
    """Stop the deployment if it was started; then check nothing of it is left.

    Raises AssertionError naming what survived: a process of the deployment (server,
    database, agent, or anything they spawned) or its temp dir.
    """
    global _deployment
    with _lock:
        deployment, _deployment = _deployment, None
    if deployment is None:
        return
    try:
        workspaces = [ws["name"] for ws in deployment.list_workspaces()]
    except Exception as exc:  # the server died: still stop the rest, then say so
        workspaces = [f"<cannot list: {exc}>"]
    pids = deployment.process_ids()
    root = deployment.root
    deployment.stop()
    leftovers = [p for p in pids if _alive(p)]
    assert not leftovers, f"processes left running after the deployment stopped: {leftovers}"
    keep = os.environ.get("SANDLOT_REALCODER_KEEP")
    assert keep or not root.exists(), f"temp dir left behind: {root}"
    # Every test deletes what it made; a workspace still there at the end is a leak.
    assert not workspaces, f"workspaces left on the real deployment: {workspaces}"
