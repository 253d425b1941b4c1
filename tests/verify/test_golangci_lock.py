"""run_lint on Go waits for another golangci-lint holding its lock ($TMPDIR/golangci-lint.lock)
instead of failing: on a shared machine (parallel test workers, CI jobs, an editor's linter)
golangci-lint's default gives up after 5 s with "parallel golangci-lint is running", exit 3."""

from __future__ import annotations

import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio

import sandlot
from sandlot import verify
from sandlot.verify.findings import LintReport
from tests.helpers import require
from tests.verify.support import TOOLS, tool_env

REPO = Path(__file__).resolve().parents[2]


async def _lint(tmpdir: Path) -> LintReport:
    provider = sandlot.local(env={**tool_env(), "TMPDIR": str(tmpdir)})
    async with provider.session() as sandbox:
        await sandbox.copy_in(str(REPO / "examples" / "intstats"), sandbox.worktree)
        with anyio.fail_after(120):
            return await verify.run_lint(sandbox, language="go")


def test_run_lint_waits_for_a_parallel_golangci_lint(tmp_path: Path) -> None:
    require((TOOLS / "bin" / "golangci-lint").exists(), "golangci-lint (40-verify-tools.sh)")
    lock = tmp_path / "golangci-lint.lock"  # this test's own TMPDIR: nobody else's lock
    # Another golangci-lint run, as far as the lock is concerned, for 8 s (> its 5 s limit).
    holder = subprocess.Popen(["flock", str(lock), "sleep", "8"])
    try:
        while subprocess.run(["flock", "-n", str(lock), "true"]).returncode == 0:
            time.sleep(0.05)  # not held yet
        # A thread of its own: once a session-scoped async fixture ran on this worker, the
        # main thread's context says "asyncio" to sniffio and anyio.run refuses to start.
        with ThreadPoolExecutor(1) as pool:
            report = pool.submit(anyio.run, _lint, tmp_path).result()
        assert report.exit_code == 0, report
        assert holder.poll() is not None  # it waited for the lock, not around it
    finally:
        holder.kill()
        holder.wait()
