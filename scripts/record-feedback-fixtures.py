#!/usr/bin/env python3
"""Run the real per-file checks of post-edit feedback on the cases of tests/feedback/cases.py
and record what the tools printed.

Each recording (tests/fixtures/verify/feedback/<case>.json) holds the case's name and the raw
runs of its checks (`CheckRun`: the exact check -- command, cwd, conditions -- and its status,
exit code, stdout and stderr), made by the same one-exec script the toolbox runs. The replay
tests read them back through the detectors' parsers. Re-record after a tool upgrade:

    bash scripts/setup.d/40-verify-tools.sh
    .venv/bin/python scripts/record-feedback-fixtures.py [CASE ...]
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sandlot
from sandlot.feedback.checks import run_checks
from sandlot.verify.detector import detector_for_file
from tests.feedback.cases import CASES, RECORDED, Case, stage
from tests.verify.support import tool_env


async def record(case: Case) -> None:
    async with sandlot.local(env=tool_env()).session() as sandbox:
        root, env = await stage(sandbox, case)
        detector = detector_for_file(case.file)
        assert detector is not None, case.file
        runs, duration = await run_checks(sandbox, root, detector.file_checks(root, case.file),
                                          budget=case.budget, env=env)
    path = RECORDED / f"{case.name}.json"
    data = {"case": case.name, "runs": [run.model_dump() for run in runs]}
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    print(f"{path.relative_to(RECORDED.parents[3])}: "
          f"{', '.join(f'{r.check.name} {r.status} {r.exit_code}' for r in runs)}; "
          f"{duration:.1f}s")


async def main(argv: list[str]) -> None:
    RECORDED.mkdir(parents=True, exist_ok=True)
    unknown = set(argv) - {c.name for c in CASES}
    if unknown:
        raise SystemExit(f"unknown cases: {', '.join(sorted(unknown))}")
    for case in CASES:
        if not argv or case.name in argv:
            await record(case)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
