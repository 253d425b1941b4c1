"""The structured results of the verify tools: pydantic models, JSON-serialisable.

Every report keeps the command that ran, its exit code and a bounded tail of its raw output, so
a caller can always fall back to what the tool itself printed when a parser did not understand
something (`parsed=False` says no parser applied at all).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from .coverage import Coverage

Language = Literal["go", "rust", "node", "python"]
Severity = Literal["error", "warning", "info"]

#: How much of each raw stream a report keeps (the tail: the end is where tools summarise).
RAW_LIMIT = 64 << 10


def clip(text: str, limit: int = RAW_LIMIT) -> tuple[str, bool]:
    """The last `limit` characters of `text`, and whether anything was cut."""
    if len(text) <= limit:
        return text, False
    return text[-limit:], True


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Finding(_Model):
    """One diagnostic from a linter or type checker."""

    file: str
    """Path relative to the workspace root (POSIX separators); absolute only when the file lies
    outside the root (e.g. a dependency)."""
    line: int | None = None
    """1-based line, when the tool gave one."""
    column: int | None = None
    """1-based column, when the tool gave one."""
    rule: str = ""
    """The tool's rule name or code: `errcheck`, `F401`, `no-unused-vars`,
    `clippy::needless_return`, `TS2322`, `return-value`, or the go vet analyzer."""
    severity: Severity = "error"
    message: str
    tool: str = ""
    """Which tool reported it (golangci-lint, ruff, eslint, clippy, mypy, tsc, go vet, rustc)."""


class TestFailure(_Model):
    """One failing test (or a build/collection error that kept tests from running)."""

    __test__ = False  # not a pytest class, despite the name

    name: str
    """The test's name as its runner shows it (`TestTable/negative`, `TestGroup::test_x`,
    `group fails inside`, `tests::sub_works`)."""
    package: str = ""
    """Go import path, Python module path, or the test file for runners that group by file."""
    file: str | None = None
    """Where it failed, relative to the workspace root, when known."""
    line: int | None = None
    message: str = ""
    """The assertion or error message (first lines)."""
    output: str = ""
    """A bounded excerpt of the test's own output / traceback."""
    selector: str = ""
    """What the runner needs to select this test again (pytest node id, Go test name, ...)."""
    kind: Literal["test", "build"] = "test"
    """`build` when the code did not compile (or collect), so tests never ran; also a command
    of a composite test script that failed without being a test runner (`tsc`, a build)."""
    step: str = ""
    """Node: the package.json script whose command found this failure, when the test script
    runs several (`npm run test:unit && npm run test:e2e`)."""


class SkippedTarget(_Model):
    """A build target the tool left out, and why (Rust: a bench that needs nightly)."""

    target: str
    """Kind and name as cargo says them: `bench nightly`, `example demo`."""
    reason: str


class _Report(_Model):
    language: Language
    command: str
    """The command line that ran (as shown by the sandbox)."""
    root: str
    """The workspace root the tool ran in (absolute, inside the sandbox)."""
    exit_code: int
    duration: float = Field(description="seconds the tool ran")
    stdout: str = ""
    """Tail of the tool's stdout (bounded; see `stdout_truncated`)."""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    parsed: bool = True
    """False when no parser applied (e.g. a custom `lint` script that is not eslint): the
    structured fields are then empty and the raw output is the result."""


class TestReport(_Report):
    """The result of `run_tests` / `run_failing_tests`."""

    __test__ = False

    runner: str
    """go-test, pytest, jest, vitest, mocha, node-test, cargo-test (or `<pm>-script` when
    unparsed); for a Node test script that runs several runners, them all joined by `+`
    (`node-test+mocha`)."""
    notes: list[str] = Field(default_factory=list)
    """What else the run says: e.g. the steps of a composite script that did not run because
    one before them failed (`&&`)."""
    interpreter: str = ""
    """Python: the interpreter that ran the tests (the project's .venv one when it has one)."""
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[TestFailure] = Field(default_factory=list)
    coverage: Coverage | None = None
    """Line coverage, per file and in total, when run with `coverage=True`."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when every test that ran passed and the run itself succeeded."""
        return self.exit_code == 0 and self.failed == 0 and not self.failures


class LintReport(_Report):
    """The result of `run_lint`."""

    tool: str
    findings: list[Finding] = Field(default_factory=list)
    checked: list[str] = Field(default_factory=list)
    """Rust: the targets cargo checked (`lib mycrate`, `test integration`, `bench fast`)."""
    skipped: list[SkippedTarget] = Field(default_factory=list)
    """Targets left out and why; their diagnostics are not findings (Rust: nightly-only
    benches, tests and examples on a stable toolchain)."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when the linter reported nothing (warnings count: a finding is a finding)."""
        return not self.findings and (self.parsed or self.exit_code == 0)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def error_count(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @computed_field  # type: ignore[prop-decorator]
    @property
    def warning_count(self) -> int:
        return sum(1 for f in self.findings if f.severity == "warning")


class TypecheckReport(LintReport):
    """The result of `run_typecheck` (same shape as a lint report).

    `configured` is False when the project has no type checker to run (a Node project with
    neither a `typecheck` script nor a tsconfig.json): nothing ran, `note` says why, and that
    is neither a pass nor a failure of the code."""

    configured: bool = True
    note: str = ""


class ScriptResult(_Model):
    """The result of `run_script`: a package.json script run with the project's manager."""

    name: str
    command: str
    root: str
    exit_code: int
    duration: float
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    timed_out: bool = False

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out
