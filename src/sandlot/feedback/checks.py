"""Post-edit feedback: the fast checks of one changed file, run within a time budget.

The detector is chosen by the file's suffix (verify.detector.detector_for_file); its
`file_checks` say what to run and its `read_file_check` reads each result. All checks run in one
exec (script.py) whose timeout is the budget: a check still running then is stopped and named
in a note, never an error. A tool that is not installed is a note too, said once per `said`
set (the toolbox keeps one). Anything else going wrong (the sandbox gone mid-way) is the
caller's to decide; see `Toolbox` for the edit tools, where feedback never fails the edit.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Mapping, MutableSet, Sequence

import anyio

from ..errors import ToolError
from ..sandbox import Sandbox
from ..verify.detector import Detector, detector_for_file
from ..verify.filecheck import CheckRun, CheckStatus, FeedbackCheck, FileCheck, FileFeedback
from ..verify.findings import Finding
from . import script

#: Seconds the checks of one edit may take, unless configured otherwise.
DEFAULT_BUDGET = 3.0
#: The checks' combined output kept (their JSON is small for one file; a runaway tool is cut).
_MAX_OUTPUT = 4 << 20


def validate_budget(budget: float) -> float:
    """A budget must be a positive number of seconds (and sane: at most an hour)."""
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not (
            0 < budget <= 3600):
        raise ToolError(f"feedback budget must be a number of seconds above 0 and at most "
                        f"3600, got {budget!r}; pass e.g. feedback_budget=3")
    return float(budget)


async def check_file(
    sandbox: Sandbox,
    root: str,
    file: str,
    *,
    budget: float = DEFAULT_BUDGET,
    env: Mapping[str, str] | None = None,
    said: MutableSet[str] | None = None,
) -> FileFeedback | None:
    """Run the fast checks of `file` (relative to `root`, inside the sandbox). None when no
    detector knows the file's language (a README, a Makefile)."""
    budget = validate_budget(budget)
    detector = detector_for_file(file)
    if detector is None:
        return None
    runs, duration = await run_checks(sandbox, root, detector.file_checks(root, file),
                                      budget=budget, env=env)
    return assemble(detector, file, runs, budget=budget, duration=duration, said=said)


async def run_checks(
    sandbox: Sandbox,
    root: str,
    checks: Sequence[FileCheck],
    *,
    budget: float,
    env: Mapping[str, str] | None = None,
) -> tuple[list[CheckRun], float]:
    """Run `checks` in one exec bounded by `budget`; each check's raw run, and the seconds
    it all took."""
    token = secrets.token_hex(16)
    started = time.monotonic()
    try:
        result = await sandbox.exec(script.build(checks, token), cwd=root, env=dict(env or {}),
                                    timeout=budget, max_output=_MAX_OUTPUT)
    except BaseException:
        # Cancelled (the edit's caller gave up) or the sandbox failed under it: the script
        # never reached its own clean-up, so its scratch files would stay in the sandbox's
        # /tmp (on the local backend, the host's), some per edit.
        await _collect(sandbox, len(checks), token, env)
        raise
    duration = time.monotonic() - started
    stdout = result.stdout
    if result.timed_out:
        stdout = await _collect(sandbox, len(checks), token, env)
    return script.split(checks, token, stdout), duration


def assemble(
    detector: Detector,
    file: str,
    runs: Sequence[CheckRun],
    *,
    budget: float,
    duration: float,
    said: MutableSet[str] | None = None,
) -> FileFeedback:
    """The feedback from the checks' raw runs (pure but for adding to `said`): each run read
    by the detector, findings merged, the file's formatting, one note per thing to know."""
    findings: list[Finding] = []
    formatted: bool | None = None
    lines: list[int] = []
    done: list[FeedbackCheck] = []
    notes: list[str] = []
    for run in runs:
        check = run.check
        outcome = detector.read_file_check(run)
        status: CheckStatus
        detail = ""
        if run.status == "skipped":
            status, detail = "skipped", "does not apply to this project"
        elif run.status == "missing":
            status, detail = "missing", f"{check.binary} is not installed in the sandbox"
            key = f"{detector.language}:{check.binary}"
            if said is None or key not in said:
                where = ", ".join([*check.path_prefix, "PATH"])
                notes.append(f"{check.binary} is not installed in the sandbox (looked in "
                             f"{where}), so {detector.language} files are not checked with "
                             "it after edits; install it to get its feedback")
                if said is not None:
                    said.add(key)
        elif run.status == "over_budget":
            status, detail = "over_budget", f"stopped at the {budget:g} s feedback budget"
            notes.append(f"{check.name} did not finish within the {budget:g} s feedback "
                         "budget and was stopped; raise the budget or run the project's "
                         f"{'linter' if check.kind != 'typecheck' else 'type checker'} "
                         "for its findings")
        elif outcome.failure:
            status, detail = "failed", outcome.failure
            notes.append(f"{check.name} could not check {file}: {outcome.failure}")
        else:
            status = "findings" if outcome.findings or outcome.formatted is False else "clean"
        findings.extend(outcome.findings)
        if check.kind == "format" and run.status == "ran" and not outcome.failure:
            formatted = outcome.formatted if formatted is None else formatted
            lines.extend(outcome.format_lines)
        done.append(FeedbackCheck(name=check.name, kind=check.kind, status=status,
                                  detail=detail))
    return FileFeedback(file=file, language=detector.language, formatted=formatted,
                        format_lines=sorted(set(lines)), findings=_dedupe(findings),
                        checks=done, notes=notes, budget=budget, duration=round(duration, 3))


async def _collect(sandbox: Sandbox, count: int, token: str,
                   env: Mapping[str, str] | None) -> str:
    """The script did not reach its own end (the budget ended it, or the edit was cancelled
    or its sandbox failed under it): the sections of the checks that finished, and the
    scratch files removed ('' when that fails too: every check then reads as over budget)."""
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
        found = await sandbox.exec(script.collect(count, token), env=dict(env or {}),
                                   timeout=30, max_output=_MAX_OUTPUT)
        return found.stdout
    return ""


def _dedupe(findings: list[Finding]) -> list[Finding]:
    """One finding per place and message: a syntax error reported by the formatter and by the
    linter (gofmt and go vet, ruff format and ruff check) is one problem."""
    seen: set[tuple[object, ...]] = set()
    out = []
    for f in findings:
        key = (f.file, f.line, f.column, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
