"""Verify overhead: `run_tests` against running the same test command with a plain exec.

run_tests detects the language (one round trip), runs the tool with a machine-readable report
and parses it; the baseline is the bare `go test -json` the Go detector runs, on the same
sandbox, interleaved. The ratio is what structure costs over raw output.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import sandlot
from sandlot.verify import run_tests

from .core import Measurement, Unavailable, interleaved

EXAMPLE = Path(__file__).parent.parent / "examples" / "intstats"


async def run(quick: bool = False) -> list[Measurement]:
    if shutil.which("go") is None:
        raise Unavailable("go is not installed; the verify bench runs the Go example")
    async with sandlot.local().session() as sandbox:
        await sandbox.copy_in(EXAMPLE, sandbox.worktree)

        async def structured() -> None:
            report = await run_tests(sandbox, timeout=300)
            assert report.failed == 0 and report.passed > 0, report

        async def plain() -> None:
            await sandbox.exec(["go", "test", "-json", "-count=1", "./..."], check=True)

        s, b = await interleaved(structured, plain, rounds=3 if quick else 8, warmup=1)
    return [
        Measurement(
            "verify", "local", "run_tests (Go example)", "exec go test -json", s, b, "s",
            target="~1x",
        )
    ]
