"""Python: pyproject.toml or setup.py; pytest (JUnit XML), ruff (JSON), mypy (JSON).

The project's own `.venv/bin` comes first on PATH, so a project that pins its tools in a
virtualenv at the root is checked with those versions.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from typing import ClassVar

from .._shell import quote
from .coverage import Coverage, summarize
from .detector import Detector, Workspace
from .filecheck import CheckKind, CheckOutcome, CheckRun, FileCheck, Reading, file_arg, judge
from .findings import Finding, Language, TestFailure, TestReport
from .parsers import coveragepy, formatters, junit, mypy, ruff
from .plan import ToolPlan, ToolRun
from .runner import report_path

#: Tells the report which interpreter ran the tests (a stderr line; see tools.py).
INTERPRETER_LINE = (
    "printf 'sandlot-interpreter: %s\\n' \"$(command -v python3 2>/dev/null)\" >&2"
)


class PythonDetector(Detector):
    language: ClassVar[Language] = "python"
    markers: ClassVar[tuple[str, ...]] = ("pyproject.toml", "setup.py")
    lsp_command: ClassVar[tuple[str, ...]] = ("pyright-langserver", "--stdio")
    lsp_extensions: ClassVar[Mapping[str, str]] = {".py": "python", ".pyi": "python"}
    lsp_install: ClassVar[str] = (
        "install pyright in the sandbox: npm install -g pyright@1.1.414 (it needs node; or "
        "scripts/setup.d/50-language-servers.sh), and put pyright-langserver on PATH")
    extensions: ClassVar[tuple[str, ...]] = (".py", ".pyi")

    def _prefix(self, ws: Workspace) -> list[str]:
        return [f"{ws.root}/.venv/bin"]

    async def test_plan(self, ws: Workspace) -> ToolPlan:
        return self._pytest(ws, [])

    def _pytest(self, ws: Workspace, selection: list[str]) -> ToolPlan:
        report = report_path("xml")
        return ToolPlan(
            kind="tests",
            language="python",
            tool="pytest",
            runner="pytest",
            # `python3 -m pytest` with the project's interpreter (its .venv first on PATH): a
            # bare `pytest` from elsewhere on PATH can bring another environment's plugins and
            # an installed copy of the package; -m also puts the root first on sys.path, so
            # the project's own source is what is imported. The interpreter is reported.
            binary="python3",
            prelude=[INTERPRETER_LINE],
            # xunit1 keeps each test's file; -p no:cacheprovider keeps the workspace clean.
            argv=[
                "python3",
                "-m",
                "pytest",
                "-o",
                "junit_family=xunit1",
                f"--junitxml={report}",
                "-p",
                "no:cacheprovider",
                *selection,
            ],
            root=ws.root,
            report_file=report,
            path_prefix=self._prefix(ws),
            # 0 passed, 1 tests failed, 2 collection errors (reported in the XML), 5 nothing
            # collected; 3 (internal error) and 4 (usage error) mean pytest itself failed.
            clean_codes=[0, 5],
            finding_codes=[1, 2],
        )

    async def coverage_plan(self, ws: Workspace) -> ToolPlan:
        # `coverage run -m pytest`, then `coverage json`: coverage.py is what pytest-cov runs
        # too, so a project with either has it, and its [tool.coverage] settings apply.
        plan = self._pytest(ws, [])
        report = report_path("json")
        # The data file goes to /tmp, not the workspace (coverage.py's default: ./.coverage).
        data = report_path("coverage")
        return plan.model_copy(update={
            "argv": ["python3", "-m", "coverage", "run", "-m", *plan.argv[2:]],
            "prelude": [*plan.prelude, f"COVERAGE_FILE={quote(data)}; export COVERAGE_FILE"],
            "coverage_file": report,
            "coverage_tool": "coverage",
            "coverage_install": "install coverage.py where the tests run (`.venv/bin/pip install "
                                "coverage` in the project, or pip install coverage)",
            # -q: no "Wrote JSON report"; its failure (no data: nothing ran) shows on stderr.
            "epilogue": [f"python3 -m coverage json -q -o {quote(report)} >&2"],
            "scratch": [data],
        })

    def parse_coverage(self, run: ToolRun) -> Coverage:
        return summarize("coverage.py", coveragepy.parse(run.coverage or "{}", root=run.plan.root))

    async def lint_plan(self, ws: Workspace) -> ToolPlan:
        return ToolPlan(
            kind="lint",
            language="python",
            tool="ruff",
            binary="ruff",
            argv=["ruff", "check", "--output-format=json", "--no-cache", "."],
            root=ws.root,
            path_prefix=self._prefix(ws),
            # Exit codes: 0 clean, 1 violations, 2 configuration error / crash.
            finding_codes=[1],
        )

    async def typecheck_plan(self, ws: Workspace) -> ToolPlan:
        targets = [] if await self._mypy_has_files(ws) else ["."]
        return ToolPlan(
            kind="typecheck",
            language="python",
            tool="mypy",
            binary="mypy",
            argv=["mypy", "-O", "json", "--no-error-summary", *targets],
            root=ws.root,
            path_prefix=self._prefix(ws),
            # mypy: 0 clean, 1 type errors, 2 fatal (bad config, crash).
            finding_codes=[1],
        )

    @staticmethod
    async def _mypy_has_files(ws: Workspace) -> bool:
        """Whether pyproject's [tool.mypy] names what to check (then `.` would override it)."""
        if "pyproject.toml" not in ws.files:
            return False
        try:
            data = tomllib.loads(await ws.read_text("pyproject.toml"))
        except tomllib.TOMLDecodeError:
            return False
        return bool(data.get("tool", {}).get("mypy", {}).get("files"))

    async def rerun_plan(self, ws: Workspace, report: TestReport) -> ToolPlan:
        selection: list[str] = []
        for failure in report.failures:
            target = failure.selector or failure.file or ""
            if target and target not in selection:
                selection.append(target)
        return self._pytest(ws, selection)

    def parse_tests(self, run: ToolRun) -> tuple[int, int, int, list[TestFailure]]:
        if run.report is None:
            return 0, 0, 0, []
        return junit.parse_pytest(run.report, root=run.plan.root)

    def parse_findings(self, run: ToolRun) -> list[Finding]:
        if run.plan.tool == "ruff":
            return ruff.parse(run.stdout, root=run.plan.root)
        return mypy.parse(run.stdout, root=run.plan.root)

    def file_checks(self, root: str, file: str) -> list[FileCheck]:
        # --force-exclude: a file the project's ruff config excludes is not checked even when
        # named; --no-cache keeps the workspace free of .ruff_cache.
        def ruff(name: str, kind: CheckKind, *args: str) -> FileCheck:
            return FileCheck(name=name, kind=kind, language="python", binary="ruff",
                             argv=["ruff", *args, "--no-cache", "--force-exclude",
                                   "--output-format=json", file_arg(file)],
                             cwd=root, root=root, file=file, path_prefix=[f"{root}/.venv/bin"])

        return [
            # 0 formatted, 1 would reformat, 2 error (a syntax error comes as JSON too).
            ruff("ruff format", "format", "format", "--check"),
            ruff("ruff check", "lint", "check"),
        ]

    def read_file_check(self, run: CheckRun) -> CheckOutcome:
        return judge(run, _read_python_check)


def _read_python_check(run: CheckRun) -> Reading:
    check = run.check
    if check.name == "ruff format":
        return formatters.ruff_format(run.stdout, file=check.file, root=check.root)
    findings = [f if f.rule != "invalid-syntax" else f.model_copy(update={"rule": "syntax"})
                for f in ruff.parse(run.stdout, root=check.root)]
    return findings, None, []
