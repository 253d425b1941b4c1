"""Run a `ToolPlan` in the sandbox (one exec) and judge its exit code.

The shell line checks the binary first, so a missing tool is told apart from a tool that ran
and failed; when the tool writes a report file, the same line prints it after a unique marker
on stdout, so the report comes back in the same round trip (and survives output truncation,
which keeps the tail).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .._shell import quote
from ..errors import (
    CoverageToolMissingError,
    LinterNotInstalledError,
    VerifyToolFailedError,
    VerifyToolMissingError,
)
from .plan import ToolPlan, ToolRun

if TYPE_CHECKING:
    from ..sandbox import Sandbox

MISSING_EXIT = 127
_MISSING_MARK = "sandlot-verify: not found on PATH: "
#: The PATH the shell searched, printed beside a missing binary so the error can name it.
_PATH_MARK = "sandlot-verify: PATH="
_REPORT_MARK = "\x1esandlot-report:"
_COVERAGE_MARK = "\x1esandlot-coverage:"
#: How a shell says a command inside a script (e.g. an npm script's eslint) does not exist.
_SHELL_NOT_FOUND = re.compile(
    r"(?m)^(?:.*?: )?(?:line \d+: )?([\w@./+-]+): (?:command )?not found\s*$"
)


#: rustup's proxy for a component that is not installed (`cargo clippy` without clippy).
_RUSTUP_MISSING = re.compile(r"'([\w-]+)' is not installed for the toolchain")


def report_path(extension: str) -> str:
    """A fresh path for a tool's report file inside the sandbox."""
    return f"/tmp/sandlot-verify-{uuid.uuid4().hex}.{extension}"


def shell_line(plan: ToolPlan, token: str) -> str:
    """The one shell line that runs `plan` (see the module docstring)."""
    parts: list[str] = []
    if plan.path_prefix:
        joined = ":".join(quote(p) for p in plan.path_prefix)
        parts.append(f'PATH={joined}:"$PATH"; export PATH')
    parts.extend(plan.prelude)
    binary = quote(plan.binary)
    parts.append(
        f"command -v {binary} >/dev/null 2>&1 || "
        f"{{ printf '%s\\n' {quote(_MISSING_MARK + plan.binary)} >&2; "
        f"printf '%s%s\\n' {quote(_PATH_MARK)} \"$PATH\" >&2; exit {MISSING_EXIT}; }}"
    )
    words = " ".join(quote(a) for a in plan.argv)
    for stale in (plan.report_file, plan.coverage_file):
        if stale is not None:
            parts.append(f"rm -f -- {quote(stale)}")
    parts.append(f"{words}")
    parts.append("rc=$?")
    parts.extend(plan.epilogue)
    # 127 from the tool: a program it runs (an npm script's eslint) is missing; say where from.
    parts.append(
        f"[ \"$rc\" -ne {MISSING_EXIT} ] || printf '%s%s\\n' {quote(_PATH_MARK)} \"$PATH\" >&2"
    )
    for mark, path in ((_REPORT_MARK, plan.report_file), (_COVERAGE_MARK, plan.coverage_file)):
        if path is not None:
            where = quote(path)
            parts.append(
                f"if [ -f {where} ]; then printf '\\n%s\\n' {quote(mark + token)}; "
                f"cat -- {where}; rm -f -- {where}; fi"
            )
    if plan.scratch:
        parts.append("rm -rf -- " + " ".join(quote(p) for p in plan.scratch))
    parts.append('exit "$rc"')
    return "; ".join(parts)


def split_report(stdout: str, token: str, mark: str = _REPORT_MARK) -> tuple[str, str | None]:
    """Separate the tool's own stdout from the report printed after the marker."""
    head, sep, tail = stdout.rpartition(f"\n{mark}{token}\n")
    if not sep:
        return stdout, None
    return head, tail


async def execute(
    plan: ToolPlan,
    sandbox: Sandbox,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> ToolRun:
    """Run `plan` in `sandbox` and return the raw outcome (judged later, by pure code)."""
    if plan.steps:
        return await _execute_steps(plan, sandbox, env=env, timeout=timeout)
    token = uuid.uuid4().hex
    result = await sandbox.exec(
        shell_line(plan, token), cwd=plan.root, env=dict(env or {}), timeout=timeout
    )
    # The coverage report is printed last: split it off first.
    stdout, coverage = (split_report(result.stdout, token, _COVERAGE_MARK)
                        if plan.coverage_file is not None else (result.stdout, None))
    stdout, report = split_report(stdout, token)
    return ToolRun(
        plan=plan,
        exit_code=result.exit_code,
        stdout=stdout,
        stderr=result.stderr,
        report=report,
        coverage=coverage,
        duration=result.duration,
        timed_out=result.timed_out,
        stdout_truncated=result.stdout_truncated,
        stderr_truncated=result.stderr_truncated,
    )


async def _execute_steps(
    plan: ToolPlan, sandbox: Sandbox, *, env: Mapping[str, str] | None, timeout: float | None
) -> ToolRun:
    """The steps one by one with the shell's rules for `&&` and `;`; the whole run's exit code
    is the last run step's, as the shell's would be. `timeout` bounds them all together."""
    runs: list[ToolRun] = []
    status = 0
    started = time.monotonic()
    for step in plan.steps:
        if (step.after == "&&" and status != 0) or (runs and runs[-1].timed_out):
            runs.append(ToolRun(plan=step, exit_code=status, stdout="", stderr="", ran=False))
            continue
        left = None if timeout is None else max(1.0, timeout - (time.monotonic() - started))
        run = await execute(step, sandbox, env=env, timeout=left)
        runs.append(run)
        status = run.exit_code
    done = [r for r in runs if r.ran]
    return ToolRun(
        plan=plan,
        exit_code=status,
        stdout="".join(f"> {r.plan.script}: {r.plan.tool}\n{r.stdout}" for r in done),
        stderr="".join(r.stderr for r in done),
        duration=sum(r.duration for r in done),
        timed_out=any(r.timed_out for r in done),
        stdout_truncated=any(r.stdout_truncated for r in done),
        stderr_truncated=any(r.stderr_truncated for r in done),
        steps=runs,
    )


_NO_MODULE = re.compile(r"No module named (\w+)")


def _missing_binary(run: ToolRun) -> str | None:
    rustup = _RUSTUP_MISSING.search(run.stderr)
    if rustup and run.exit_code != 0:
        return rustup.group(1)
    if run.exit_code != MISSING_EXIT:
        return None
    for line in run.stderr.splitlines():
        if line.startswith(_MISSING_MARK):
            return line[len(_MISSING_MARK) :].strip()
    # A script (npm run lint, ...) that calls a program which is not installed.
    match = _SHELL_NOT_FOUND.search(run.stderr)
    return match.group(1) if match else None


def searched_path(run: ToolRun) -> str | None:
    """The PATH the shell line searched, when it printed it (see shell_line)."""
    for line in reversed(run.stderr.splitlines()):
        if line.startswith(_PATH_MARK):
            return line[len(_PATH_MARK) :]
    return None


def not_installed(caller: str, binary: str, run: ToolRun) -> str:
    """The one wording of "a tool is missing", whatever the tool or language: what is missing,
    where it was looked for (the sandbox's PATH, not the caller's), and how to change that."""
    rustup = _RUSTUP_MISSING.search(run.stderr)
    if rustup and rustup.group(1) == binary:
        where = "rustup has no such component for the sandbox's toolchain"
        fix = f"install it there (rustup component add {binary.removeprefix('cargo-')})"
    else:
        path = searched_path(run)
        where = "not found on the sandbox's PATH" + (f" ({path})" if path is not None else "")
        fix = (
            "install it in the sandbox, or give the tool a PATH that has it: "
            'env={"PATH": "..."} in Python, --env PATH=... on the command line'
        )
    return f"{caller}: {binary} is not installed: {where}; {fix}"


def coverage_missing(caller: str, tool: str, run: ToolRun) -> CoverageToolMissingError:
    """The error for "the tests could run, but nothing can measure their coverage"."""
    path = searched_path(run)
    where = f" (PATH: {path})" if path is not None else ""
    return CoverageToolMissingError(
        f"{caller}: coverage=True needs {tool}, which the sandbox does not have{where}; "
        f"{run.plan.coverage_install or f'install {tool} in the sandbox'}, or run without "
        "coverage",
        binary=tool,
    )


_WHAT = {"tests": "test results", "lint": "findings", "typecheck": "findings", "script": "a result"}


def check_outcome(run: ToolRun, caller: str) -> None:
    """Raise when the tool is missing, timed out or failed in itself; return when its exit code
    means "ran cleanly" or "ran and found problems" (the detector's own codes)."""
    plan = run.plan
    module = _NO_MODULE.search(run.stderr)
    if module and plan.argv[:2] == ["python3", "-m"] and module.group(1) == plan.argv[2]:
        name = module.group(1)
        if name == plan.coverage_tool:
            raise coverage_missing(caller, name, run)
        raise VerifyToolMissingError(
            f"{caller}: the project's python3 has no {name} module; install it where the tests "
            f"run (e.g. `.venv/bin/pip install {name}` in the project, or pip install {name})",
            binary=name,
        )
    binary = _missing_binary(run)
    if binary is not None:
        if binary == plan.coverage_tool:
            raise coverage_missing(caller, binary, run)
        error = LinterNotInstalledError if plan.kind == "lint" else VerifyToolMissingError
        raise error(not_installed(caller, binary, run), binary=binary)
    if run.timed_out:
        raise VerifyToolFailedError(
            f"{caller}: {plan.tool} timed out after {run.duration:.0f}s at {plan.root}: "
            f"{plan.display}; raise the timeout or narrow the run",
            command=plan.display,
            exit_code=run.exit_code,
            stderr=run.stderr or run.stdout,
        )
    if run.exit_code in plan.clean_codes or run.exit_code in plan.finding_codes:
        return
    if not plan.parsed and run.exit_code != 0:
        # A custom script: any non-zero code is its verdict; the raw output says why.
        return
    raise VerifyToolFailedError(
        f"{caller}: {plan.tool} failed (exit {run.exit_code}) instead of reporting "
        f"{_WHAT[plan.kind]}, at {plan.root}: {plan.display}",
        command=plan.display,
        exit_code=run.exit_code,
        stderr=run.stderr or run.stdout,
    )


def nothing_parsed(run: ToolRun, caller: str) -> VerifyToolFailedError:
    """The error for "the exit code says problems exist, yet none could be read"."""
    plan = run.plan
    return VerifyToolFailedError(
        f"{caller}: {plan.tool} exited {run.exit_code}, which means {_WHAT[plan.kind]} exist, "
        f"but none could be read from its output ({plan.display} at {plan.root}); the tool "
        "probably failed before running",
        command=plan.display,
        exit_code=run.exit_code,
        stderr=run.stderr or run.stdout,
    )
