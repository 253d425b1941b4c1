"""The real-Coder tier: a whole Coder deployment (see harness.py) for the session.

The deployment is the session's shared one (shared.py): the contract suite and the
coder-backend tests use the same server, started once. Whether the tier runs is decided
in ONE place, `require_real_coder()` (skipped locally without the binary, FAILS when
CI=true).
"""

from __future__ import annotations

import pytest

from .harness import RealCoder
from .shared import require_real_coder, shared_real_coder

__all__ = ["real_coder", "require_real_coder"]


@pytest.fixture(scope="session")
def real_coder() -> RealCoder:
    """The session's one deployment; stopped (and checked) when the session ends."""
    return shared_real_coder()
