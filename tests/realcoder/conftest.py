"""The real-Coder tier: a whole Coder deployment (see harness.py) for the session.

Whether the tier runs is decided in ONE place, `require_real_coder()`: it runs when
the cached binary from scripts/build-coder.sh exists; without it the tier is
skipped locally and FAILS when CI=true (tests/helpers.py::require).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import require

from .harness import BUILD_SCRIPT, RealCoder, cache_dir, cached_binary, pinned_version
from .postgres import find_pg_bin


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


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="session")
def real_coder() -> Iterator[RealCoder]:
    """One deployment for the whole session; torn down (and checked) at the end."""
    binary = require_real_coder()
    with RealCoder(binary) as deployment:
        yield deployment
        pids = deployment.process_ids()
        root = deployment.root
    leftovers = [p for p in pids if _alive(p)]
    assert not leftovers, f"processes left running after the deployment stopped: {leftovers}"
    keep = os.environ.get("SANDLOT_REALCODER_KEEP")
    assert keep or not root.exists(), f"temp dir left behind: {root}"
