"""The verify tools (sandlot.verify) as agent tools: run_tests, run_lint, run_typecheck,
run_script, each with an optional `workspace`.

A thin adapter: sandlot.verify already resolves a named workspace through any object with
`resolve(name) -> root` (a `WorkspaceSet` is one) and detects the language in that root; this
module only declares the tool arguments and renders each report as text for the model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..verify.coverage import Coverage
from ..verify.findings import LintReport, ScriptResult, TestReport, TypecheckReport
from .models import SECRETS, ToolResult

_WORKSPACE = (
    "Name of the workspace (repository root) to act in. Optional when the sandbox has one "
    "workspace; required when it has several."
)
_LANGUAGE = ("go, rust, node or python; omitted: detected from the marker files at the "
             "workspace root (go.mod, Cargo.toml, package.json, pyproject.toml / setup.py).")

#: How many failures / findings the text lists (all of them stay in `report`).
SHOWN = 30


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class VerifyArgs(_Args):
    """Run the project's tests / linter / type checker."""

    language: Literal["go", "rust", "node", "python"] | None = Field(
        default=None, description=_LANGUAGE)
    workspace: str | None = Field(default=None, description=_WORKSPACE)
    secrets: list[str] | None = Field(default=None, description=SECRETS)


class RunTestsArgs(VerifyArgs):
    """Run the project's whole test suite, optionally measuring line coverage."""

    coverage: bool = Field(
        default=False,
        description="Also measure line coverage (go -coverprofile, coverage.py, c8 / jest / "
        "vitest, cargo tarpaulin): per file, the lines never run, and the total.")


class RunScriptArgs(_Args):
    """Run a package.json script with the project's package manager."""

    name: str = Field(description="The script's name in package.json (e.g. build, test).")
    workspace: str | None = Field(default=None, description=_WORKSPACE)
    secrets: list[str] | None = Field(default=None, description=SECRETS)


Report = TestReport | LintReport | TypecheckReport | ScriptResult


class VerifyResult(ToolResult):
    """A verify tool's report, with its summary as `text`."""

    workspace: str
    passed: bool
    report: Report


def _cut(text: str, limit: int = 300) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + "…"


def render_tests(report: TestReport) -> str:
    lines = [f"{report.runner} ({report.language}) in {report.root}: {report.passed} passed, "
             f"{report.failed} failed, {report.skipped} skipped"]
    for failure in report.failures[:SHOWN]:
        where = f" at {failure.file}:{failure.line}" if failure.file else ""
        kind = "build error" if failure.kind == "build" else "FAIL"
        lines.append(f"{kind} {failure.name}{where}: {_cut(failure.message or failure.output)}")
    if len(report.failures) > SHOWN:
        lines.append(f"[{len(report.failures) - SHOWN} more failures in the structured report]")
    if not report.parsed:
        lines.append(_cut(report.stdout + "\n" + report.stderr, 4000))
    lines += report.notes
    if report.coverage is not None:
        lines += render_coverage(report.coverage)
    return "\n".join(lines)


def render_coverage(coverage: Coverage) -> list[str]:
    """The total, then the files least covered first, each with the lines that never ran."""
    lines = [f"coverage ({coverage.tool}): {coverage.percent:.1f}% of lines "
             f"({coverage.covered}/{coverage.lines})"]
    missed = sorted((f for f in coverage.files if f.covered < f.lines),
                    key=lambda f: (f.percent, f.file))
    for f in missed[:SHOWN]:
        where = ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in f.uncovered)
        lines.append(f"  {f.file}: {f.percent:.1f}% ({f.covered}/{f.lines}), not run: "
                     f"{_cut(where, 200)}")
    if len(missed) > SHOWN:
        lines.append(f"  [{len(missed) - SHOWN} more files in the structured report]")
    return lines


def render_findings(report: LintReport) -> str:
    if not getattr(report, "configured", True):
        return f"run_typecheck ({report.language}) in {report.root}: {getattr(report, 'note', '')}"
    lines = [f"{report.tool} ({report.language}) in {report.root}: {report.error_count} "
             f"errors, {report.warning_count} warnings"]
    for f in report.findings[:SHOWN]:
        place = ":".join(str(p) for p in (f.file, f.line, f.column) if p is not None)
        rule = f" [{f.rule}]" if f.rule else ""
        lines.append(f"{place}: {f.severity}{rule}: {_cut(f.message)}")
    if len(report.findings) > SHOWN:
        lines.append(f"[{len(report.findings) - SHOWN} more findings in the structured report]")
    if not report.parsed:
        lines.append(_cut(report.stdout + "\n" + report.stderr, 4000))
    return "\n".join(lines)


def render_script(result: ScriptResult) -> str:
    parts = [f"{result.command} in {result.root}"]
    if result.stdout.strip():
        parts.append(_cut(result.stdout, 8000))
    if result.stderr.strip():
        parts.append("[stderr]\n" + _cut(result.stderr, 8000))
    parts.append("[timed out]" if result.timed_out else f"[exit code {result.exit_code}]")
    return "\n".join(parts)
