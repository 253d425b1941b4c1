#!/usr/bin/env python3
"""Run the real verify tools on the fixture projects and record what they printed.

Each recording (tests/fixtures/verify/recorded/<case>.json) is a `ToolRun`: the exact plan verify
built (command, root, report file, exit-code rules) plus the raw stdout, stderr, exit code and
report-file content. The parser tests replay these, so they never rely on hand-typed output.
Re-record after a tool upgrade changes a format:

    bash scripts/setup.d/40-verify-tools.sh scripts/setup.d/41-cargo-tarpaulin.sh
    .venv/bin/python scripts/record-verify-fixtures.py [CASE ...]
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import sandlot
from bench.verify_corpus.fetch import prepared
from bench.verify_corpus.projects import by_name
from sandlot.verify.detector import choose, detectors_for, probe
from sandlot.verify.plan import ToolRun
from sandlot.verify.runner import execute
from sandlot.verify.tools import build_test_report
from tests.verify.support import RECORDED, copy_fixture, tool_env


@dataclass(frozen=True)
class Case:
    fixture: str
    kinds: tuple[str, ...]
    overlays: tuple[str, ...] = ()
    language: str | None = None
    suffix: str = ""
    corpus: bool = False
    """`fixture` names a project of bench/verify_corpus (prepared from its registry, cached)."""

    def name(self, kind: str) -> str:
        parts = [f"corpus-{self.fixture}" if self.corpus else self.fixture, *self.overlays]
        return "+".join(parts) + (f"-{self.suffix}" if self.suffix else "") + f"-{kind}"


CASES = [
    Case("go", ("tests", "lint", "typecheck", "rerun", "coverage")),
    Case("go", ("coverage",), overlays=("go-broken",)),
    Case("go", ("tests", "lint", "typecheck"), overlays=("go-broken",)),
    Case("go", ("tests",), overlays=("go-panic",)),
    Case("go", ("lint",), overlays=("go-many-findings",)),
    Case("rust", ("tests", "lint", "typecheck", "rerun")),
    Case("rust", ("coverage",), overlays=("rust-uncovered",)),
    Case("rust", ("coverage",), overlays=("rust-broken",)),
    Case("rust", ("tests", "typecheck"), overlays=("rust-broken",)),
    Case("rust", ("tests", "rerun"), overlays=("rust-dupnames",)),
    Case("rust", ("lint", "typecheck"), overlays=("rust-nightly-bench",)),
    Case("python", ("tests", "lint", "typecheck", "rerun", "coverage")),
    Case("python", ("lint",), overlays=("python-badconfig",)),
    Case("node", ("tests", "lint", "typecheck", "rerun", "coverage")),
    Case("node", ("lint",), overlays=("node-badconfig",)),
    Case("node-jest", ("tests", "rerun", "coverage")),
    Case("node-vitest", ("tests", "rerun", "coverage")),
    Case("node-composite", ("tests", "rerun", "coverage")),
    Case("polyglot", ("tests",), language="go", suffix="go"),
    Case("polyglot", ("tests",), language="node", suffix="node"),
    # The rerun shapes of issue 35, on real projects of the corpus.
    *(Case(name, ("tests", "rerun"), corpus=True)
      for name in ("go-humanize", "rust-cfg-if", "node-ms", "node-escape-html", "node-bytes")),
]


async def record(case: Case, only: set[str]) -> None:
    wanted = [case.name(k) for k in case.kinds if not only or case.name(k) in only]
    if not wanted:
        return
    async with sandlot.local(env=tool_env()).session() as sandbox:
        if case.corpus:
            root = sandbox.worktree
            await sandbox.copy_in(str(prepared(by_name([case.fixture])[0])), root)
        else:
            root = await copy_fixture(sandbox, case.fixture, *case.overlays)
        ws = await probe(sandbox, root)
        detector = choose("record", ws, case.language, detectors_for(ws.files))
        last: ToolRun | None = None
        for kind in case.kinds:
            if kind == "rerun":
                assert last is not None, "rerun needs a tests run first"
                plan = await detector.rerun_plan(ws, build_test_report(detector, last))
            else:
                # tests, lint, typecheck, coverage: the detector's plan of that name.
                plan = await getattr(detector, f"{'test' if kind == 'tests' else kind}_plan")(ws)
            run = await execute(plan, sandbox)
            if kind == "tests":
                last = run
            if case.name(kind) not in wanted:
                continue
            path = RECORDED / f"{case.name(kind)}.json"
            path.write_text(json.dumps(run.model_dump(), indent=1, sort_keys=True) + "\n")
            print(f"{path.relative_to(RECORDED.parents[3])}: exit {run.exit_code}, "
                  f"{len(run.stdout)}+{len(run.stderr)} chars, {run.duration:.1f}s")


async def main(argv: list[str]) -> None:
    RECORDED.mkdir(parents=True, exist_ok=True)
    only = set(argv)
    for case in CASES:
        await record(case, only)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
