"""The coder backend on a REAL Coder deployment (tests/realcoder): opt-in, run it with

    SANDLOT_TEST_BACKENDS=coder-real scripts/test tests/contract

It needs the release built by scripts/build-coder.sh (or SANDLOT_CODER_BINARY plus
SANDLOT_CODER_PROTO_ROOT pointing at another build) and PostgreSQL; without them it is skipped
locally and fails when CI=true (tests/realcoder/conftest.py::require_real_coder).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import sandlot

SHARED_PIDS = True


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    from tests.realcoder.conftest import require_real_coder
    from tests.realcoder.harness import RealCoder

    coder = RealCoder(require_real_coder())
    # Entered on the loop's own thread: the harness's children die with the thread that
    # started them (pdeathsig), so a short-lived worker thread would take the server down.
    coder.__enter__()
    try:
        yield sandlot.coder(
            template=coder.template_single,
            on_close="delete",
            coder_binary=str(coder.binary),
            coder_url=coder.url,
            session_token=coder.session_token,
        )
    finally:
        coder.__exit__(None, None, None)
