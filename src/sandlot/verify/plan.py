"""What a verify tool is about to run (`ToolPlan`) and what came back (`ToolRun`).

A plan is data, not code: the recording script stores plans and runs as JSON, and the parser
tests replay them, so the exact command verify runs is the one whose output was recorded.
"""

from __future__ import annotations

import shlex
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .findings import Language

Kind = Literal["tests", "lint", "typecheck", "script"]


class ToolPlan(BaseModel):
    """One command a detector wants run at a workspace root, and how to judge its exit code."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind
    language: Language
    tool: str
    """The name users know: golangci-lint, eslint, pytest, cargo clippy, tsc ..."""
    runner: str = ""
    """For tests: go-test, pytest, jest, vitest, node-test, cargo-test (rerun syntax follows it)."""
    binary: str
    """The program that must be on PATH; its absence is a 'not installed' error, not a result."""
    argv: list[str]
    root: str
    report_file: str | None = None
    """A file the tool writes its machine-readable report to (read back in the same exec)."""
    coverage_file: str | None = None
    """run_tests(coverage=True): the coverage report the run writes (read back like
    `report_file`, after it)."""
    coverage_tool: str = ""
    """What measures coverage (a program, or a Python module for `python3 -m`): when it is
    missing, the error is a CoverageToolMissingError that says `coverage_install`."""
    coverage_install: str = ""
    """How to install `coverage_tool`, for that error."""
    epilogue: list[str] = Field(default_factory=list)
    """Shell statements run after the tool whatever its exit code, before the reports are
    read (`coverage json` after `coverage run`); the run's exit code stays the tool's."""
    scratch: list[str] = Field(default_factory=list)
    """Paths the run makes for itself (a coverage tool's directories), removed after the
    reports were read."""
    path_prefix: list[str] = Field(default_factory=list)
    """Directories put in front of PATH (the project's own node_modules/.bin or .venv/bin)."""
    prelude: list[str] = Field(default_factory=list)
    """Shell statements run before the tool (e.g. adding a reporter to NODE_OPTIONS)."""
    clean_codes: list[int] = Field(default_factory=lambda: [0])
    """Exit codes meaning the tool ran and found nothing wrong."""
    finding_codes: list[int] = Field(default_factory=lambda: [1])
    """Exit codes meaning the tool ran and found failures / findings. Any other code means the
    tool itself failed, and is raised as an error with its stderr."""
    parsed: bool = True
    """False when the output has no known format (a custom script): the report is raw only."""
    context: dict[str, str] = Field(default_factory=dict)
    """Facts the parser needs besides the output (e.g. the Go module path)."""
    steps: list[ToolPlan] = Field(default_factory=list)
    """A script that runs several commands (Node: `npm run a && npm run b`, each under its own
    runner): the plans run one by one, each joined to the one before by its `after`."""
    after: str = ""
    """For a step: "&&" (run only when the last step that ran succeeded) or ";" (always)."""
    script: str = ""
    """For a step: the package.json script its command comes from."""

    @property
    def display(self) -> str:
        return shlex.join(self.argv)


class ToolRun(BaseModel):
    """A finished plan: exit code, output, and the report file's content if there was one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    plan: ToolPlan
    exit_code: int
    stdout: str
    stderr: str
    report: str | None = None
    coverage: str | None = None
    """The content of the plan's `coverage_file`, when it was written."""
    duration: float = 0.0
    timed_out: bool = False
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    steps: list[ToolRun] = Field(default_factory=list)
    """The steps' own runs, for a plan with steps."""
    ran: bool = True
    """False for a step not run because a step before it failed and `&&` joined them."""
