"""`python -m bench.verify_corpus [--only NAME,...] [--out DIR]`: score sandlot.verify on the
corpus (see __init__). Exit 1 when any project and tool is below 100 % recall or precision."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import sandlot
from sandlot import verify
from tests.verify.support import tool_env

from . import truth
from .fetch import prepared
from .projects import Project, by_name

RESULTS = Path(__file__).resolve().parents[1] / "results"
Truth = Callable[[Path, dict[str, str]], truth.Keys]


def _node(tests: Truth) -> dict[str, Truth | None]:
    return {"tests": tests, "lint": truth.eslint, "typecheck": truth.tsc}


#: Per project: the direct tool runs whose output is the truth (None: nothing to check, e.g.
#: a Node project without a type checker, where sandlot must say "not configured").
TRUTH: dict[str, dict[str, Truth | None]] = {
    **{name: {"tests": truth.go_tests, "lint": truth.golangci, "typecheck": truth.go_vet}
       for name in ("go-uuid", "go-errors", "go-xxhash")},
    **{name: {"tests": truth.rust_tests,
              "lint": lambda r, e: truth.cargo_findings(r, e, "clippy"),
              "typecheck": lambda r, e: truth.cargo_findings(r, e, "check")}
       for name in ("rust-fnv", "rust-itoa", "rust-semver")},
    **{name: {"tests": truth.pytest_tests, "lint": truth.ruff, "typecheck": truth.mypy}
       for name in ("py-six", "py-more-itertools", "py-toolz")},
    "node-json-schema-traverse": {
        "tests": lambda r, e: truth.mocha_tests(r, e, ["spec"]),
        "lint": truth.eslint, "typecheck": None,
    },
    "node-dequal": _node(lambda r, e: truth.jest_like_tests(
        r, e, ["vitest", "run", "--reporter=json"], "--outputFile=")),
    "node-mri": _node(lambda r, e: truth.node_test_tests(r, e, ["test/unit.test.js"])
                      + truth.jest_like_tests(r, e, ["jest", "--json"], "--outputFile=")),
    # The rerun shapes (issue 35): tests only, and `run_failing_tests` scored too (RERUN).
    "go-humanize": {"tests": truth.go_tests},
    "rust-cfg-if": {"tests": truth.rust_tests},
    **{name: {"tests": lambda r, e: truth.jest_like_tests(
        r, e, ["vitest", "run", "--reporter=json"], "--outputFile=")}
       for name in ("node-ms", "node-escape-html")},
    "node-bytes": {"tests": lambda r, e: truth.mocha_tests(r, e, [])},
}

#: Projects whose `run_failing_tests` is scored as the tool "rerun": the truth is the first
#: run's failures, which it must report again, and no test that passed may run again.
RERUN = {"go-humanize", "rust-cfg-if", "node-ms", "node-escape-html", "node-bytes"}


def environment(root: Path) -> dict[str, str]:
    """The verify tests' tool environment, the project's node_modules/.bin first on PATH (as
    npm puts it) for the direct tool runs."""
    tools = tool_env()
    return {**os.environ, **tools, "PATH": f"{root / 'node_modules/.bin'}:{tools['PATH']}"}


@dataclass
class Score:
    project: str
    tool: str
    truth: int
    reported: int
    matched: int
    missed: list[str]
    extra: list[str]
    unconfigured: bool = False  # the truth: no such tool for this project

    @property
    def recall(self) -> float:
        return self.matched / self.truth if self.truth else 1.0

    @property
    def precision(self) -> float:
        return self.matched / self.reported if self.reported else 1.0


def _test_key(language: str, failure: verify.TestFailure) -> truth.Key:
    if language == "go":
        return (failure.package, failure.name)
    if language == "rust":
        return (failure.name,)
    if language == "python":
        return (failure.selector,)
    return (failure.package or failure.file, failure.name)


def _failure_keys(language: str, report: verify.TestReport) -> truth.Keys:
    # Build failures count where the truth names them (Go: a package that did not build).
    return Counter(_test_key(language, f) for f in report.failures
                   if f.kind == "test" or language == "go")


async def _sandlot_keys(project: Project, source: Path) -> dict[str, truth.Keys | None]:
    provider = sandlot.local(env=tool_env())  # verify adds node_modules/.bin itself
    keys: dict[str, truth.Keys | None] = {}
    tools = TRUTH[project.name]
    async with provider.session() as sandbox:
        await sandbox.copy_in(str(source), sandbox.worktree)
        # Lint and typecheck first: a test run leaves files (coverage reports) they would see.
        if "lint" in tools:
            lint = await verify.run_lint(sandbox, language=project.language)
            keys["lint"] = Counter((f.file, f.line, f.rule) for f in lint.findings)
        if "typecheck" in tools:
            check = await verify.run_typecheck(sandbox, language=project.language)
            keys["typecheck"] = (Counter((f.file, f.line, f.rule) for f in check.findings)
                                 if check.configured else None)
        tests = await verify.run_tests(sandbox, language=project.language)
        keys["tests"] = _failure_keys(project.language, tests)
        if project.name in RERUN:
            again = await verify.run_failing_tests(sandbox)
            rerun = _failure_keys(project.language, again)
            # Each test that passed and ran again is an extra.
            rerun[("a passing test ran again",)] += again.passed
            keys["rerun"] = +rerun  # `+` drops a zero count
    return keys


def _score(project: str, tool: str, truths: truth.Keys | None,
           reported: truth.Keys | None) -> Score:
    if truths is None or reported is None:
        # Both must agree that there is nothing to run (e.g. no type checker configured).
        same = truths is None and reported is None
        return Score(project, tool, 1, 1, 1 if same else 0,
                     [] if same else ["whether a tool is configured"], [],
                     unconfigured=truths is None)
    matched = sum((truths & reported).values())
    return Score(project, tool, sum(truths.values()), sum(reported.values()), matched,
                 [repr(k) for k in (truths - reported)], [repr(k) for k in (reported - truths)])


async def score_project(project: Project) -> list[Score]:
    source = prepared(project)
    with tempfile.TemporaryDirectory(prefix="sandlot-corpus-") as tmp:
        copy = Path(tmp) / project.name
        shutil.copytree(source, copy, symlinks=True)
        env = environment(copy)
        truths = {tool: (fn(copy, env) if fn is not None else None)
                  for tool, fn in TRUTH[project.name].items()}
    if project.name in RERUN:
        truths["rerun"] = truths["tests"]
    reported = await _sandlot_keys(project, source)
    return [_score(project.name, tool, truths[tool], reported[tool])
            for tool in ("tests", "lint", "typecheck", "rerun") if tool in truths]


def table(scores: list[Score]) -> str:
    lines = ["| project | tool | truth | reported | recall | precision |",
             "|---|---|---|---|---|---|"]
    for s in scores:
        if s.unconfigured:
            counts = "none configured | said so" if s.matched else "none configured | ran"
        else:
            counts = f"{s.truth} | {s.reported}"
        lines.append(f"| {s.project} | {s.tool} | {counts} | {s.recall:.0%} | "
                     f"{s.precision:.0%} |")
    return "\n".join(lines)


async def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.verify_corpus", description=__doc__)
    parser.add_argument("--only", help="comma-separated project names")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument("--prepare", action="store_true",
                        help="only fetch and prepare the projects (cached), score nothing")
    args = parser.parse_args(argv)
    projects = by_name(args.only.split(",") if args.only else None)
    if args.prepare:
        for project in projects:
            print(f"corpus: {project.name}: {prepared(project)}", file=sys.stderr)
        return 0
    scores: list[Score] = []
    started = time.monotonic()
    for project in projects:
        print(f"corpus: {project.name} ({project.package} {project.version}) ...",
              file=sys.stderr, flush=True)
        scores += await score_project(project)
    print(table(scores))
    for s in scores:
        for what, keys in (("missed", s.missed), ("extra", s.extra)):
            for key in keys:
                print(f"  {s.project} {s.tool} {what}: {key}")
    if not args.only:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "verify_corpus.json").write_text(json.dumps(
            {"duration_s": round(time.monotonic() - started, 1),
             "projects": [{"name": p.name, "package": p.package, "version": p.version,
                           "covers": p.covers} for p in projects],
             "scores": [{**asdict(s), "recall": s.recall, "precision": s.precision}
                        for s in scores]}, indent=1) + "\n")
        (args.out / "verify_corpus.md").write_text(table(scores) + "\n")
    return 0 if all(s.recall == 1 and s.precision == 1 for s in scores) else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1:])))
