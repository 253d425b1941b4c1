"""Go: go.mod; `go test -json`, golangci-lint (JSON), `go vet -json`."""

from __future__ import annotations

import re
from typing import ClassVar

from .detector import Detector, Workspace
from .findings import Finding, Language, TestFailure, TestReport
from .parsers import golangci, gotest, govet
from .plan import ToolPlan, ToolRun

_MODULE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)


def module_path(go_mod: str) -> str:
    """The module path declared in go.mod ('' when absent)."""
    match = _MODULE.search(go_mod)
    return match.group(1).strip('"') if match else ""


class GoDetector(Detector):
    language: ClassVar[Language] = "go"
    markers: ClassVar[tuple[str, ...]] = ("go.mod",)

    async def _module(self, ws: Workspace) -> str:
        return module_path(await ws.read_text("go.mod"))

    async def test_plan(self, ws: Workspace) -> ToolPlan:
        return ToolPlan(
            kind="tests",
            language="go",
            tool="go test",
            runner="go-test",
            binary="go",
            argv=["go", "test", "-json", "-count=1", "./..."],
            root=ws.root,
            # 0: all passed; 1: a test or a build failed (both are in the JSON); else: go failed.
            finding_codes=[1],
            context={"module": await self._module(ws)},
        )

    async def lint_plan(self, ws: Workspace) -> ToolPlan:
        return ToolPlan(
            kind="lint",
            language="go",
            tool="golangci-lint",
            binary="golangci-lint",
            argv=[
                "golangci-lint",
                "run",
                "--output.json.path=stdout",
                "--output.text.path=stderr",
                "--show-stats=false",
                # Its defaults keep 50 issues per linter and 3 with the same text, and one per
                # line: a report would miss findings, and which ones would vary between runs.
                "--max-issues-per-linter=0",
                "--max-same-issues=0",
                "--uniq-by-line=false",
                # Another golangci-lint on the machine holds its lock ($TMPDIR): wait for it
                # instead of failing after 5 s with "parallel golangci-lint is running".
                "--allow-serial-runners",
                "./...",
            ],
            root=ws.root,
            # 1 is golangci-lint's "issues found" code; 3 (failure), 4 (timeout), 5 (no Go
            # files), 7 (error) mean the linter did not do its job.
            finding_codes=[1],
        )

    async def typecheck_plan(self, ws: Workspace) -> ToolPlan:
        return ToolPlan(
            kind="typecheck",
            language="go",
            tool="go vet",
            binary="go",
            argv=["go", "vet", "-json", "./..."],
            root=ws.root,
            # With -json, vet diagnostics exit 0; type errors exit 1 and are printed as text.
            finding_codes=[1],
        )

    async def rerun_plan(self, ws: Workspace, report: TestReport) -> ToolPlan:
        names: list[str] = []
        packages: list[str] = []
        for failure in report.failures:
            if failure.package and failure.package not in packages:
                packages.append(failure.package)
            top = failure.selector.split("/", 1)[0]
            if failure.kind == "test" and top and top not in names:
                names.append(top)
        argv = ["go", "test", "-json", "-count=1"]
        if names and all(f.kind == "test" for f in report.failures):
            argv.append("-run=^(" + "|".join(re.escape(n) for n in names) + ")$")
        argv.extend(packages or ["./..."])
        plan = await self.test_plan(ws)
        return plan.model_copy(update={"argv": argv})

    def parse_tests(self, run: ToolRun) -> tuple[int, int, int, list[TestFailure]]:
        module = run.plan.context.get("module", "")
        return gotest.parse(run.stdout, root=run.plan.root, module=module)

    def parse_findings(self, run: ToolRun) -> list[Finding]:
        if run.plan.tool == "golangci-lint":
            return golangci.parse(run.stdout, root=run.plan.root)
        # Where vet prints its JSON moved between Go releases (stderr, then stdout): read both.
        return govet.parse(run.stdout + "\n" + run.stderr, root=run.plan.root)
