"""`sandlot verify tests|lint|typecheck [PATH]`: copy PATH into a fresh sandbox, run the verify
tool there, print a table (or JSON), and exit 1 when the code fails.

Exit codes: 0 the code passes; 1 tests failed or findings exist; 2 verify could not run (no
project detected, a tool missing or crashed, bad arguments).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from ..errors import SandlotError
from .coverage import Coverage
from .findings import LintReport, TestReport

EXIT_FAILS = 1
EXIT_ERROR = 2


def register(subparsers: Any) -> None:
    """Add the `verify` subcommand (called by sandlot.cli)."""
    from ..cli import add_provider_arguments

    parser: argparse.ArgumentParser = subparsers.add_parser(
        "verify",
        help="run a project's tests, linter or type checker in a sandbox",
        description="Copy PATH (default: the current directory) into a fresh sandbox, detect "
        "its language from the marker files at its root (go.mod, Cargo.toml, package.json, "
        "pyproject.toml / setup.py), run the tests, the linter or the type checker there, and "
        "print the structured result. Exit status: 0 passes, 1 fails, 2 could not run.",
        epilog="examples:\n"
        "  sandlot verify tests\n"
        "  sandlot verify tests --coverage\n"
        "  sandlot verify lint services/api --json\n"
        "  sandlot verify typecheck . --language node\n",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("what", choices=["tests", "lint", "typecheck"], help="what to run")
    parser.add_argument(
        "path", nargs="?", default=".", help="project directory to copy in (default: .)"
    )
    parser.add_argument(
        "--language", help="go, rust, node or python (needed when several are detected)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument(
        "--coverage", action="store_true",
        help="tests only: measure line coverage and print it per file (go -coverprofile, "
        "coverage.py, c8 / jest / vitest, cargo tarpaulin)",
    )
    parser.add_argument("--timeout", type=float, help="seconds before the tool is stopped")
    parser.add_argument(
        "--env", metavar="KEY=VALUE", action="append", default=[],
        help="environment for the tool in the sandbox, e.g. --env PATH=/venv/bin:/usr/bin when "
        "the tool is not on the sandbox's PATH; repeatable",
    )
    add_provider_arguments(parser)
    parser.set_defaults(handler=run)


async def run(args: argparse.Namespace) -> int:
    from ..cli import provider_from_args
    from . import tools

    if not os.path.isdir(args.path):
        print(f"sandlot verify: {args.path!r} is not a directory", file=sys.stderr)
        return EXIT_ERROR
    env: dict[str, str] = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            print(f"sandlot verify: --env needs KEY=VALUE, got {item!r}", file=sys.stderr)
            return EXIT_ERROR
        env[key] = value
    if args.coverage and args.what != "tests":
        print(f"sandlot verify: --coverage is for tests, not {args.what}", file=sys.stderr)
        return EXIT_ERROR
    try:
        provider = provider_from_args(args)
        async with provider.session() as sandbox:
            await sandbox.copy_in(args.path, sandbox.worktree)
            report: TestReport | LintReport
            if args.what == "tests":
                report = await tools.run_tests(
                    sandbox, language=args.language, env=env, timeout=args.timeout,
                    coverage=args.coverage,
                )
            elif args.what == "lint":
                report = await tools.run_lint(
                    sandbox, language=args.language, env=env, timeout=args.timeout
                )
            else:
                report = await tools.run_typecheck(
                    sandbox, language=args.language, env=env, timeout=args.timeout
                )
    except SandlotError as exc:
        print(f"sandlot verify: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        print(report.model_dump_json(indent=2))
    elif isinstance(report, TestReport):
        print_tests(report, sys.stdout)
    else:
        print_findings(report, sys.stdout)
    return 0 if report.ok else EXIT_FAILS


def _table(rows: list[list[str]], out: TextIO) -> None:
    if not rows:
        return
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  ".join([*cells, row[-1]]).rstrip(), file=out)


def _where(file: str | None, line: int | None, column: int | None = None) -> str:
    if not file:
        return "?"
    text = file
    if line is not None:
        text += f":{line}"
        if column is not None:
            text += f":{column}"
    return text


def print_tests(report: TestReport, out: TextIO) -> None:
    """A readable test report: one row per failure, then the counts."""
    print(
        f"{report.command}  ({report.language}, {report.runner}; exit {report.exit_code}, "
        f"{report.duration:.1f}s)",
        file=out,
    )
    if not report.parsed:
        print("(output not understood by any parser; the tool's own output follows)", file=out)
        print(report.stdout + report.stderr, file=out)
    rows = [["", "WHERE", "TEST", "MESSAGE"]]
    for failure in report.failures:
        label = "BUILD" if failure.kind == "build" else "FAIL"
        rows.append(
            [label, _where(failure.file, failure.line), failure.name, _one_line(failure.message)]
        )
    if len(rows) > 1:
        _table(rows, out)
    print(f"{report.passed} passed, {report.failed} failed, {report.skipped} skipped", file=out)
    for note in report.notes:
        print(f"note: {note}", file=out)
    if report.coverage is not None:
        print_coverage(report.coverage, out)


def print_coverage(coverage: Coverage, out: TextIO) -> None:
    """One row per file (lines, covered, percent, the lines never run), then the total."""
    rows = [["FILE", "LINES", "COVERED", "PERCENT", "UNCOVERED"]]
    for f in coverage.files:
        rows.append([f.file, str(f.lines), str(f.covered), f"{f.percent:.1f}%",
                     ranges_text(f.uncovered)])
    rows.append(["TOTAL", str(coverage.lines), str(coverage.covered),
                 f"{coverage.percent:.1f}%", f"({coverage.tool})"])
    print(file=out)
    _table(rows, out)


def ranges_text(ranges: list[tuple[int, int]]) -> str:
    """`14, 20-23` (coverage.py's own way of writing missing lines)."""
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def print_findings(report: LintReport, out: TextIO) -> None:
    """A readable lint / typecheck report: one row per finding, then the totals."""
    print(
        f"{report.command}  ({report.language}, {report.tool}; exit {report.exit_code}, "
        f"{report.duration:.1f}s)",
        file=out,
    )
    if not report.parsed:
        print("(output not understood by any parser; the tool's own output follows)", file=out)
        print(report.stdout + report.stderr, file=out)
    rows = [["WHERE", "SEVERITY", "RULE", "MESSAGE"]]
    for f in report.findings:
        rows.append([_where(f.file, f.line, f.column), f.severity, f.rule, _one_line(f.message)])
    if len(rows) > 1:
        _table(rows, out)
    print(
        f"{len(report.findings)} findings ({report.error_count} errors, "
        f"{report.warning_count} warnings)",
        file=out,
    )


def _one_line(text: str, limit: int = 160) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."
