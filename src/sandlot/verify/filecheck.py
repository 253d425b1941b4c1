"""Per-file checks for post-edit feedback: what a detector wants run on ONE changed file
(`FileCheck`), what came back (`CheckRun`), what its parser read (`CheckOutcome`), and the
feedback an edit carries (`FileFeedback`).

A check is data, not code, like a `ToolPlan`: the recording script stores checks and their raw
runs as JSON (scripts/record-feedback-fixtures.py) and the parser tests replay them, so the exact
command that runs is the one whose output was recorded. adr/0049 says why these checks and not
the project's whole linter.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field

from .findings import Finding, Language

CheckKind = Literal["format", "lint", "typecheck"]

#: How a check ended: `ran` (its exit code and output are there); `skipped` (it does not apply
#: to this project: no prettier, no eslint config, no Go module); `missing` (it applies but its
#: binary is not installed); `over_budget` (stopped when the feedback budget ran out).
RunStatus = Literal["ran", "skipped", "missing", "over_budget"]

#: What a check said about the file, as the feedback reports it.
CheckStatus = Literal["clean", "findings", "skipped", "missing", "over_budget", "failed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class FileCheck(_Model):
    """One fast command a detector runs on one changed file (or, for go vet, its package)."""

    name: str
    """What users call it: gofmt, go vet, ruff format, ruff check, prettier, eslint, rustfmt."""
    kind: CheckKind
    language: Language
    binary: str
    """The program that must be on PATH (after `path_prefix`); absent = `missing`, never an
    error."""
    argv: list[str]
    cwd: str
    """Where it runs (absolute, inside the sandbox)."""
    root: str
    """The workspace root: findings are relative to it."""
    file: str
    """The changed file, relative to `root`."""
    path_prefix: list[str] = Field(default_factory=list)
    """Directories put in front of PATH (the project's .venv/bin or node_modules/.bin)."""
    when: str = ""
    """A shell condition (run in the check's own shell, in `cwd`, after `path_prefix`) whose
    success means the check applies at all: the project has prettier, has an eslint config,
    the file is in a Go module. Empty: always. It runs in that shell itself, not a subshell,
    so it must not `exit` or `cd`, and names its variables `_w...` (the script's are `d`,
    `rc`)."""
    clean_codes: list[int] = Field(default_factory=lambda: [0])
    finding_codes: list[int] = Field(default_factory=lambda: [1])
    """Exit codes meaning "ran and found something"; any other code not in `clean_codes` is
    the tool failing in itself, unless its parser read a syntax error from the output."""


def file_arg(file: str) -> str:
    """A relative path as a command argument: never mistaken for an option."""
    return f"./{file}" if file.startswith("-") else file


class CheckRun(_Model):
    """A check as it ended in the sandbox: status, exit code and raw output."""

    check: FileCheck
    status: RunStatus
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""


class CheckOutcome(_Model):
    """What a detector's parser read from one finished check. Pure data."""

    findings: list[Finding] = Field(default_factory=list)
    formatted: bool | None = None
    """For a format check: whether the file is formatted (None: the formatter could not tell,
    e.g. a syntax error)."""
    format_lines: list[int] = Field(default_factory=list)
    """Lines of the file the formatter would change, when the tool says which."""
    failure: str = ""
    """Set when the tool failed in itself (bad configuration, crash): its own words."""


#: A tool's own reading: (findings, formatted, lines the formatter would change).
Reading = tuple[list[Finding], bool | None, list[int]]


def judge(run: CheckRun, read: Callable[[CheckRun], Reading]) -> CheckOutcome:
    """Read a finished check and judge its exit code, the same way for every tool.

    A syntax error the parser read is an answer whatever the exit code (gofmt exits 2,
    prettier 2, ruff format 2 on one). Otherwise a code outside the check's clean and finding
    codes, or a "found something" code with nothing read, is the tool failing in itself: the
    outcome says so with the tool's own words instead of reporting a clean file."""
    if run.status != "ran" or run.exit_code is None:
        return CheckOutcome()
    check = run.check
    try:
        findings, formatted, lines = read(run)
    except (ValueError, json.JSONDecodeError):
        return CheckOutcome(failure=_failure(run, "its output could not be read"))
    code = run.exit_code
    if any(f.rule == "syntax" for f in findings):
        return CheckOutcome(findings=findings, formatted=formatted, format_lines=lines)
    if code in check.clean_codes or code in check.finding_codes:
        said_something = bool(findings) or formatted is False
        if code in check.finding_codes and code not in check.clean_codes and not said_something:
            return CheckOutcome(failure=_failure(run, "nothing could be read from its output"))
        return CheckOutcome(findings=findings, formatted=formatted, format_lines=lines)
    return CheckOutcome(failure=_failure(run, "failed"))


def _failure(run: CheckRun, what: str) -> str:
    words = " ".join((run.stderr.strip() or run.stdout.strip()).split())
    if len(words) > 400:
        words = words[:400] + "…"
    return f"{run.check.name} exited {run.exit_code}, {what}: {words or 'no output'}"


class FeedbackCheck(_Model):
    """One check of the feedback: which tool, and how it ended."""

    name: str
    kind: CheckKind
    status: CheckStatus
    detail: str = ""
    """Why it was skipped, missing or failed (the tool's own words when it failed)."""


class FileFeedback(_Model):
    """The fast per-file checks run after a write or edit: formatting and lint findings of the
    changed file (Go: vet of its package), within a time budget."""

    file: str
    """The changed file, relative to the workspace root."""
    language: Language
    formatted: bool | None = None
    """Whether the formatter accepts the file; None when no formatter ran or it could not
    tell (a syntax error is then among the findings)."""
    format_lines: list[int] = Field(default_factory=list)
    """Lines the formatter would change, when it says (ruff, rustfmt)."""
    findings: list[Finding] = Field(default_factory=list)
    checks: list[FeedbackCheck] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    """What else to know: a check over the budget, a tool not installed (said once per toolbox),
    a tool that failed in itself."""
    budget: float
    duration: float

    @computed_field  # type: ignore[prop-decorator]
    @property
    def over_budget(self) -> bool:
        """Some check was stopped when the budget ran out (a note, not a failure)."""
        return any(c.status == "over_budget" for c in self.checks)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """Nothing found and nothing unformatted, as far as the checks that ran can tell."""
        return not self.findings and self.formatted is not False
