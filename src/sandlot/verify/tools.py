"""The verify tools: run_tests, run_lint, run_typecheck, run_failing_tests, last_test_failures,
run_script and detect_all. Every command runs in the sandbox through `Sandbox.exec`.

Where they run: `root` (absolute, or relative to the worktree; default the worktree), or a
named `workspace` resolved by a `workspaces` object (e.g. `sandlot.workspaces.WorkspaceSet`).
"""

from __future__ import annotations

import functools
import posixpath
import re
import weakref
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, ParamSpec, Protocol, TypeVar

from .. import telemetry
from ..errors import (
    ConfigurationError,
    NoTestRunError,
    UnknownScriptError,
    VerifyToolFailedError,
)
from ..sandbox import Sandbox
from .coverage import Coverage
from .detector import Detector, Workspace, choose, detectors_for, probe
from .findings import (
    Language,
    LintReport,
    ScriptResult,
    SkippedTarget,
    TestFailure,
    TestReport,
    TypecheckReport,
    clip,
)
from .node import NodeDetector
from .parsers.paths import excerpt
from .plan import ToolRun
from .runner import check_outcome, execute, nothing_parsed


class WorkspaceResolver(Protocol):
    """Anything that maps a workspace name (or None for "the only one") to a root path."""

    def resolve(self, name: str | None) -> str: ...


# The last test report per sandbox and root, for last_test_failures / run_failing_tests. Weak,
# so a closed and dropped sandbox takes its reports with it.
_LAST: weakref.WeakKeyDictionary[Sandbox, dict[str, TestReport]] = weakref.WeakKeyDictionary()


def resolve_root(
    sandbox: Sandbox,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
) -> str:
    """The absolute root the tools run in."""
    if workspaces is not None:
        if root is not None:
            raise ConfigurationError("pass either root or workspace, not both")
        return posixpath.normpath(workspaces.resolve(workspace))
    if workspace is not None:
        raise ConfigurationError(
            f"workspace {workspace!r} given but no workspaces to resolve it: pass "
            "workspaces=<WorkspaceSet> (or root=<path>)"
        )
    if root is None:
        return sandbox.worktree
    return posixpath.normpath(posixpath.join(sandbox.worktree, root))


async def _prepare(
    caller: str,
    sandbox: Sandbox,
    *,
    language: str | None,
    root: str | None,
    workspace: str | None,
    workspaces: WorkspaceResolver | None,
    env: Mapping[str, str] | None,
    timeout: float | None,
) -> tuple[Workspace, Detector]:
    where = resolve_root(sandbox, root, workspace, workspaces)
    ws = await probe(sandbox, where, env=env, timeout=timeout)
    return ws, choose(caller, ws, language, detectors_for(ws.files))


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _traced(run: Callable[_P, Coroutine[Any, Any, _R]]) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """One `sandlot.verify {tool}` span per run: language, tool, counts (never output)."""
    tool = run.__name__

    @functools.wraps(run)
    async def traced(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with telemetry.span(f"sandlot.verify {tool}", {"sandlot.verify.tool": tool}) as current:
            report = await run(*args, **kwargs)
            if current is not None:
                counts = {f"sandlot.verify.{field}": value for field in
                          ("language", "runner", "passed", "failed", "skipped", "exit_code")
                          if isinstance(value := getattr(report, field, None), str | int)}
                findings = getattr(report, "findings", None)
                if isinstance(findings, list):
                    counts["sandlot.verify.findings"] = len(findings)
                if isinstance(getattr(report, "tool", None), str):
                    counts["sandlot.verify.linter"] = report.tool  # type: ignore[attr-defined]
                telemetry.set_attributes(current, counts)
            return report

    return traced


async def detect_all(
    sandbox: Sandbox,
    root: str | None = None,
    *,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
) -> list[Language]:
    """Every language whose marker is at the root, in the order go, rust, node, python (one
    round trip)."""
    ws = await probe(sandbox, resolve_root(sandbox, root, workspace, workspaces))
    return [d.language for d in detectors_for(ws.files)]


def _raw(run: ToolRun) -> dict[str, Any]:
    stdout, out_cut = clip(run.stdout)
    stderr, err_cut = clip(run.stderr)
    return {
        "command": run.plan.display,
        "root": run.plan.root,
        "exit_code": run.exit_code,
        "duration": run.duration,
        "stdout": stdout,
        "stderr": stderr,
        "stdout_truncated": out_cut or run.stdout_truncated,
        "stderr_truncated": err_cut or run.stderr_truncated,
        "parsed": run.plan.parsed,
    }


_INTERPRETER = re.compile(r"^sandlot-interpreter: (.*)$", re.M)


def build_test_report(detector: Detector, run: ToolRun, caller: str = "run_tests") -> TestReport:
    """Judge and parse a finished test run. Pure: the recorded-output tests call it directly."""
    if run.steps:
        return _composite_report(detector, run, caller)
    check_outcome(run, caller)
    plan = run.plan
    passed = failed = skipped = 0
    failures: list[TestFailure] = []
    if plan.parsed:
        if plan.report_file is not None and run.report is None:
            raise nothing_parsed(run, caller)
        passed, failed, skipped, failures = detector.parse_tests(run)
        if run.exit_code in plan.finding_codes and not failures:
            raise nothing_parsed(run, caller)
    shown = _INTERPRETER.search(run.stderr)
    coverage, notes = _coverage(detector, run, caller)
    return TestReport(
        language=plan.language,
        runner=plan.runner or "unknown",
        interpreter=shown.group(1).strip() if shown else "",
        passed=passed,
        failed=failed,
        skipped=skipped,
        failures=failures,
        coverage=coverage,
        notes=notes,
        **_raw(run),
    )


def _coverage(detector: Detector, run: ToolRun, caller: str) -> tuple[Coverage | None, list[str]]:
    """The run's coverage, when it measured any. A run whose tests could not all run (a build
    failure) may write no report: then a note says so; a clean run without one is an error."""
    plan = run.plan
    if plan.coverage_file is None:
        return None, []
    if run.coverage is not None:
        return detector.parse_coverage(run), []
    if run.exit_code in plan.clean_codes:
        raise VerifyToolFailedError(
            f"{caller}: {plan.tool} ran cleanly but wrote no coverage report ({plan.display} "
            f"at {plan.root})",
            command=plan.display, exit_code=run.exit_code, stderr=run.stderr or run.stdout,
        )
    return None, [f"coverage: no report was written (exit {run.exit_code}): the tests did not "
                  "all run; fix the failures above and run again"]


def _composite_report(detector: Detector, run: ToolRun, caller: str) -> TestReport:
    """Each step judged and parsed on its own (a runner by its report, any other command by
    its exit code), then summed; every failure says which script found it."""
    passed = failed = skipped = 0
    failures: list[TestFailure] = []
    notes: list[str] = []
    for step in run.steps:
        plan = step.plan
        if not step.ran:
            notes.append(f"{plan.script}: `{plan.tool}` did not run: a step before it failed "
                         "and `&&` joined them")
            continue
        if plan.parsed:
            part = build_test_report(detector, step, caller)
            passed, failed, skipped = (passed + part.passed, failed + part.failed,
                                       skipped + part.skipped)
            failures += [f.model_copy(update={"step": plan.script}) for f in part.failures]
        else:
            check_outcome(step, caller)
            if step.exit_code != 0:
                text = step.stderr.strip() or step.stdout.strip()
                failures.append(TestFailure(
                    name=f"{plan.script}: {plan.tool}", step=plan.script, kind="build",
                    message=f"exit {step.exit_code}: {text.splitlines()[-1] if text else ''}",
                    output=excerpt(text),
                ))
    coverage: Coverage | None = None
    if run.plan.coverage_file is not None:
        # Each step's report holds every step before it too (see NodeDetector.coverage_plan):
        # the last one written is the run's.
        last = [s for s in run.steps if s.ran and s.coverage is not None][-1:]
        coverage, more = _coverage(detector, last[0] if last else run, caller)
        notes += more
    return TestReport(
        language=run.plan.language, runner=run.plan.runner or "unknown", passed=passed,
        failed=failed, skipped=skipped, failures=failures, notes=notes, coverage=coverage,
        **_raw(run),
    )


def build_findings_report(
    detector: Detector, run: ToolRun, caller: str
) -> LintReport | TypecheckReport:
    """Judge and parse a finished lint / typecheck run. Pure."""
    check_outcome(run, caller)
    plan = run.plan
    findings = []
    checked: list[str] = []
    skipped: list[SkippedTarget] = []
    if plan.parsed:
        if plan.report_file is not None and run.report is None:
            raise nothing_parsed(run, caller)
        findings = detector.parse_findings(run)
        checked, skipped = detector.parse_targets(run)
        if run.exit_code in plan.finding_codes and not skipped and not any(
            f.severity == "error" for f in findings
        ):
            # The exit code says errors exist; a run that printed none of them did not work
            # (unless they were the errors of targets it reports as skipped).
            raise nothing_parsed(run, caller)
    cls = LintReport if plan.kind == "lint" else TypecheckReport
    return cls(language=plan.language, tool=plan.tool, findings=findings, checked=checked,
               skipped=skipped, **_raw(run))


@_traced
async def run_tests(
    sandbox: Sandbox,
    *,
    language: str | None = None,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    coverage: bool = False,
) -> TestReport:
    """Run the project's whole test suite and return the structured result; with
    `coverage=True`, measured by the language's coverage tool, its line coverage per file and
    in total in `report.coverage` (a missing tool: CoverageToolMissingError)."""
    ws, detector = await _prepare(
        "run_tests", sandbox, language=language, root=root, workspace=workspace,
        workspaces=workspaces, env=env, timeout=timeout,
    )
    plan = await (detector.coverage_plan(ws) if coverage else detector.test_plan(ws))
    run = await execute(plan, sandbox, env=env, timeout=timeout)
    report = build_test_report(detector, run, "run_tests")
    _LAST.setdefault(sandbox, {})[ws.root] = report
    return report


@_traced
async def run_lint(
    sandbox: Sandbox,
    *,
    language: str | None = None,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> LintReport:
    """Run the project's linter and return its findings."""
    ws, detector = await _prepare(
        "run_lint", sandbox, language=language, root=root, workspace=workspace,
        workspaces=workspaces, env=env, timeout=timeout,
    )
    plan = await detector.lint_plan(ws)
    run = await execute(plan, sandbox, env=env, timeout=timeout)
    report = build_findings_report(detector, run, "run_lint")
    assert isinstance(report, LintReport)
    return report


@_traced
async def run_typecheck(
    sandbox: Sandbox,
    *,
    language: str | None = None,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> TypecheckReport:
    """Run the project's type checker (go vet, cargo check, tsc, mypy) and return its findings."""
    ws, detector = await _prepare(
        "run_typecheck", sandbox, language=language, root=root, workspace=workspace,
        workspaces=workspaces, env=env, timeout=timeout,
    )
    missing = await detector.no_typechecker(ws)
    if missing is not None:
        return TypecheckReport(
            language=detector.language, command="", root=ws.root, exit_code=0, duration=0.0,
            tool="none", configured=False, note=missing,
        )
    plan = await detector.typecheck_plan(ws)
    run = await execute(plan, sandbox, env=env, timeout=timeout)
    report = build_findings_report(detector, run, "run_typecheck")
    assert isinstance(report, TypecheckReport)
    return report


def _last(
    sandbox: Sandbox, root: str, language: str | None, caller: str
) -> TestReport:
    reports = _LAST.get(sandbox, {})
    report = reports.get(root)
    if report is None:
        raise NoTestRunError(
            f"{caller}: no test run recorded for {root} in this sandbox; call run_tests first"
        )
    if language is not None and report.language != language.strip().lower():
        raise NoTestRunError(
            f"{caller}: the last test run at {root} was {report.language}, not "
            f"{language.strip().lower()}; call run_tests with language={language!r} first"
        )
    return report


def last_test_failures(
    sandbox: Sandbox,
    *,
    language: str | None = None,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
) -> list[TestFailure]:
    """The failures of the last `run_tests` / `run_failing_tests` at this root."""
    where = resolve_root(sandbox, root, workspace, workspaces)
    return list(_last(sandbox, where, language, "last_test_failures").failures)


@_traced
async def run_failing_tests(
    sandbox: Sandbox,
    report: TestReport | None = None,
    *,
    language: str | None = None,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> TestReport:
    """Run again only the failures of `report` (default: the last report at this root)."""
    if report is None:
        where = resolve_root(sandbox, root, workspace, workspaces)
        report = _last(sandbox, where, language, "run_failing_tests")
    if not report.failures:
        # Nothing failed, so nothing runs: the rerun of a passing run is an empty pass (a
        # loop "run_tests, then run_failing_tests until ok" must not need a special case).
        return TestReport(
            language=report.language, runner=report.runner, command="", root=report.root,
            exit_code=0, duration=0.0,
            notes=["nothing ran: the report had no failures to run again"],
        )
    ws, detector = await _prepare(
        "run_failing_tests", sandbox, language=language or report.language, root=report.root,
        workspace=None, workspaces=None, env=env, timeout=timeout,
    )
    plan = await detector.rerun_plan(ws, report)
    run = await execute(plan, sandbox, env=env, timeout=timeout)
    new = build_test_report(detector, run, "run_failing_tests")
    _LAST.setdefault(sandbox, {})[ws.root] = new
    return new


@_traced
async def run_script(
    sandbox: Sandbox,
    name: str,
    *,
    language: str | None = None,
    root: str | None = None,
    workspace: str | None = None,
    workspaces: WorkspaceResolver | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> ScriptResult:
    """Run a package.json script with the package manager of the project's lock file."""
    ws, detector = await _prepare(
        "run_script", sandbox, language=language, root=root, workspace=workspace,
        workspaces=workspaces, env=env, timeout=timeout,
    )
    if not isinstance(detector, NodeDetector):
        raise UnknownScriptError(
            f"run_script: runs package.json scripts, but the project at {ws.root} is "
            f"{detector.language}; pass language='node' where a package.json is at the root"
        )
    plan = await detector.script_plan(ws, name)
    run = await execute(plan, sandbox, env=env, timeout=timeout)
    check_outcome(run, "run_script")
    stdout, out_cut = clip(run.stdout)
    stderr, err_cut = clip(run.stderr)
    return ScriptResult(
        name=name,
        command=plan.display,
        root=plan.root,
        exit_code=run.exit_code,
        duration=run.duration,
        stdout=stdout,
        stderr=stderr,
        stdout_truncated=out_cut or run.stdout_truncated,
        stderr_truncated=err_cut or run.stderr_truncated,
        timed_out=run.timed_out,
    )

