"""Go: go.mod; `go test -json`, golangci-lint (JSON), `go vet -json`."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import ClassVar

from .coverage import Coverage, summarize
from .detector import Detector, Workspace
from .filecheck import CheckOutcome, CheckRun, FileCheck, Reading, file_arg, judge
from .findings import Finding, Language, TestFailure, TestReport
from .parsers import formatters, gocover, golangci, gotest, govet
from .parsers.paths import relative
from .plan import ToolPlan, ToolRun
from .runner import report_path

_MODULE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)

#: The shell test of go vet's `when`: the directory is in a module (a go.mod in it or above,
#: as `go env GOMOD` finds it, modules not turned off), or go is missing (then the check is
#: `missing`, not skipped). Shell builtins only: `go env GOMOD` was one more Go start, about
#: 5 ms, on every edit of a Go file (bench/feedback_bench.py).
IN_MODULE = ('! command -v go || { [ "${GO111MODULE:-}" != off ] && _wd=$PWD && '
             'until [ -f "$_wd/go.mod" ] || [ -z "$_wd" ]; do _wd=${_wd%/*}; done && '
             '[ -f "$_wd/go.mod" ]; }')


def module_path(go_mod: str) -> str:
    """The module path declared in go.mod ('' when absent)."""
    match = _MODULE.search(go_mod)
    return match.group(1).strip('"') if match else ""


def run_pattern(names: list[str]) -> str:
    """A `go test -run` pattern selecting exactly these tests (full names as go test prints
    them, `TestA/row_name`): each name level by level (`^TestA$/^row_name$`), the names joined
    by a top-level `|`, which go test splits into separate per-level patterns, so (parent,
    subtest) pairs do not mix. A final `/^$` keeps a selected test's own subtests from running
    again (no subtest is named "": go test names an empty one `#00`)."""
    return "|".join(
        "/".join(f"^{_go_quote(part)}$" for part in name.split("/")) + "/^$" for name in names
    )


def _go_quote(text: str) -> str:
    """regexp.QuoteMeta: go test has already rewritten the name (spaces to `_`)."""
    return _GO_SPECIAL.sub(r"\\\g<0>", text)


_GO_SPECIAL = re.compile(r"[\\.+*?()|\[\]{}^$]")


class GoDetector(Detector):
    language: ClassVar[Language] = "go"
    markers: ClassVar[tuple[str, ...]] = ("go.mod",)
    lsp_command: ClassVar[tuple[str, ...]] = ("gopls",)
    lsp_extensions: ClassVar[Mapping[str, str]] = {".go": "go"}
    lsp_install: ClassVar[str] = (
        "install gopls in the sandbox: go install golang.org/x/tools/gopls@v0.23.0 (or "
        "scripts/setup.d/50-language-servers.sh), and put its directory on PATH")
    extensions: ClassVar[tuple[str, ...]] = (".go",)

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

    async def coverage_plan(self, ws: Workspace) -> ToolPlan:
        plan = await self.test_plan(ws)
        profile = report_path("out")
        # go test writes the profile even when tests fail (each package's blocks, merged).
        return plan.model_copy(update={
            "argv": [*plan.argv[:-1], f"-coverprofile={profile}", plan.argv[-1]],
            "coverage_file": profile, "coverage_tool": "go",
        })

    def parse_coverage(self, run: ToolRun) -> Coverage:
        module = run.plan.context.get("module", "")
        return summarize("go-cover", gocover.parse(run.coverage or "", module=module))

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
        plan = await self.test_plan(ws)
        packages = list(dict.fromkeys(f.package for f in report.failures if f.package))
        if not all(f.kind == "test" and f.selector for f in report.failures):
            # A package that did not build: all of it runs again.
            return plan.model_copy(update={"argv": [*plan.argv[:-1], *(packages or ["./..."])]})
        # One `go test` per set of failures: a -run pattern applies to every package named, so
        # packages share a run only when their failures are the same names.
        by_package: dict[str, list[str]] = {}
        for failure in report.failures:
            names = by_package.setdefault(failure.package, [])
            if failure.selector not in names:
                names.append(failure.selector)
        runs: dict[str, list[str]] = {}
        for package, names in by_package.items():
            runs.setdefault(run_pattern(names), []).append(package)
        steps = [
            plan.model_copy(update={"argv": [*plan.argv[:-1], f"-run={pattern}", *pkgs]})
            for pattern, pkgs in runs.items()
        ]
        if len(steps) == 1:
            return steps[0]
        shown = "; ".join(step.display for step in steps)
        return plan.model_copy(update={
            "argv": ["sh", "-c", shown],
            "steps": [s.model_copy(update={"after": ";"}) for s in steps],
        })

    def parse_tests(self, run: ToolRun) -> tuple[int, int, int, list[TestFailure]]:
        module = run.plan.context.get("module", "")
        return gotest.parse(run.stdout, root=run.plan.root, module=module)

    def parse_findings(self, run: ToolRun) -> list[Finding]:
        if run.plan.tool == "golangci-lint":
            return golangci.parse(run.stdout, root=run.plan.root)
        # Where vet prints its JSON moved between Go releases (stderr, then stdout): read both.
        return govet.parse(run.stdout + "\n" + run.stderr, root=run.plan.root)

    def file_checks(self, root: str, file: str) -> list[FileCheck]:
        package = posixpath.join(root, posixpath.dirname(file))
        return [
            # -l lists the file when gofmt would change it; a parse error goes to stderr (2).
            FileCheck(name="gofmt", kind="format", language="go", binary="gofmt",
                      argv=["gofmt", "-l", file_arg(file)], cwd=root, root=root, file=file,
                      finding_codes=[]),
            # vet of the file's package (vet works on packages, not files). Outside a module
            # it cannot run: skipped, not a failure. With -json, diagnostics exit 0; type and
            # parse errors exit 1 as text.
            FileCheck(name="go vet", kind="typecheck", language="go", binary="go",
                      argv=["go", "vet", "-json", "."], cwd=package, root=root, file=file,
                      when=IN_MODULE),
        ]

    def read_file_check(self, run: CheckRun) -> CheckOutcome:
        return judge(run, _read_go_check)


def _read_go_check(run: CheckRun) -> Reading:
    check = run.check
    if check.name == "gofmt":
        return formatters.gofmt(run.stdout, run.stderr, file=check.file, root=check.root,
                                cwd=check.cwd)
    # vet prints paths relative to the package directory it ran in, or absolute.
    found = govet.parse(run.stdout + "\n" + run.stderr, root=check.cwd)
    return [f.model_copy(update={"file": relative(f.file, check.root,
                                                  posixpath.relpath(check.cwd, check.root))})
            for f in found], None, []
