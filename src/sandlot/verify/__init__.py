"""Language-aware verify tools: tests, lint and type checks, structured, on any sandbox.

    from sandlot import verify

    report = await verify.run_tests(sandbox)            # language from the marker files
    for failure in report.failures:
        print(failure.file, failure.line, failure.message)

    report = await verify.run_tests(sandbox, coverage=True)
    print(report.coverage.percent, report.coverage.files[0].uncovered)

Detection is by marker files at the workspace root (go.mod, Cargo.toml, package.json,
pyproject.toml / setup.py; order Go, Rust, Node, Python). Every command runs inside the
sandbox through `Sandbox.exec`, so local, docker and coder sandboxes behave the same.
"""

from .coverage import Coverage, FileCoverage
from .detector import SUPPORTED, Detector, Workspace, detectors_for
from .findings import (
    Finding,
    LintReport,
    ScriptResult,
    SkippedTarget,
    TestFailure,
    TestReport,
    TypecheckReport,
)
from .tools import (
    WorkspaceResolver,
    detect_all,
    last_test_failures,
    run_failing_tests,
    run_lint,
    run_script,
    run_tests,
    run_typecheck,
)

__all__ = [
    "SUPPORTED",
    "Coverage",
    "Detector",
    "FileCoverage",
    "Finding",
    "LintReport",
    "ScriptResult",
    "SkippedTarget",
    "TestFailure",
    "TestReport",
    "TypecheckReport",
    "Workspace",
    "WorkspaceResolver",
    "detect_all",
    "detectors_for",
    "last_test_failures",
    "run_failing_tests",
    "run_lint",
    "run_script",
    "run_tests",
    "run_typecheck",
]
