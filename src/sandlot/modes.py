"""Runtime modes: run a code snippet as python, golang, node or shell in any `Sandbox`.

    result = await run_code(sandbox, "print('hi')", mode="python", requirements=["six"])
    report = await health(sandbox)            # Health(mode='python', runtime_version=...)

A mode fixes the runtime (python3, go, node, bash), the file extension, and how requirements
are installed. The mode comes from the `mode` argument, else `$SANDLOT_MODE`, else detection
inside the sandbox in the order python, golang, node, shell (one round trip). The code never
decides the mode: Go code in python mode just fails in python3, with its error in stderr.

Each run writes the code to a fresh directory `<worktree>/.sandlot/runs/<id>/`, runs it with the
worktree as current directory (so files it writes stay for the next run), and removes the run
directory afterwards. One run is one round trip to the sandbox (two when the mode is detected).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import anyio

from . import _mode_script as script
from .errors import (
    CommandFailed,
    ConfigurationError,
    RequirementsInstallError,
    RuntimeNotFoundError,
    UnknownModeError,
)
from .sandbox import DEFAULT_MAX_OUTPUT, ExecResult, Sandbox
from .secrets import EnvValue

#: Environment variable naming the mode when the caller does not.
MODE_ENV = "SANDLOT_MODE"
#: How long a health probe may take before it counts as failed.
PROBE_TIMEOUT = 60.0
#: Where run directories go, relative to the worktree.
RUNS_DIR = ".sandlot/runs"
_MAX_REQUIREMENT = 512


@dataclass(frozen=True)
class Mode:
    """How one runtime runs code: its binary, file extension, version command, installer."""

    name: str
    binary: str
    extension: str
    version_command: str
    installer: str  # "python", "node" or "" (requirements ignored)

    def run_line(self, source: str, run_dir: str) -> str:
        """The sh line that runs `source` (a path inside `run_dir`)."""
        src = script.q(source)
        if self.name == "python":
            deps = script.q(f"{run_dir}/.deps")
            return f'PYTHONPATH={deps}"${{PYTHONPATH:+:$PYTHONPATH}}" python3 {src}'
        if self.name == "golang":
            # `go build` then run, rather than `go run`: `go run` turns every non-zero exit
            # status into 1 (printing "exit status N"), which would lose the program's status.
            binary = script.q(f"{run_dir}/main")
            return f"go build -o {binary} {src} && {binary}"
        if self.name == "node":
            return f"node {src}"
        return f"bash {src}"

    def display(self, source: str) -> str:
        """A readable form of the run, for results and messages."""
        runners = {"python": "python3", "golang": "go build+run", "node": "node"}
        return f"{runners.get(self.name, 'bash')} {source}"


#: Every mode, in auto-detection order.
MODES: dict[str, Mode] = {
    m.name: m
    for m in (
        Mode("python", "python3", ".py", "python3 --version", "python"),
        Mode("golang", "go", ".go", "go version", ""),
        Mode("node", "node", ".js", "node --version", "node"),
        Mode("shell", "bash", ".sh", "bash --version", ""),
    )
}


@dataclass(frozen=True)
class RunResult(ExecResult):
    """An `ExecResult` of a code run, plus the mode it ran in and notes about how.

    `notes` say what a caller may want to know without it being an error, e.g. that uv was
    missing and pip installed the requirements, or that requirements were ignored.
    """

    mode: str = ""
    installer: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Health:
    """The active mode of a sandbox and its runtime's version string."""

    mode: str
    runtime_version: str


def get_mode(name: str) -> Mode:
    """The `Mode` called `name`; an unknown name raises `UnknownModeError` listing the valid."""
    mode = MODES.get(name) if isinstance(name, str) else None
    if mode is None:
        raise UnknownModeError(
            f"unknown mode {name!r}; valid modes: {', '.join(MODES)}"
        )
    return mode


def configured_mode(
    mode: str | None = None, environ: Mapping[str, str] | None = None
) -> str | None:
    """The mode asked for: `mode`, else `$SANDLOT_MODE`, else None (meaning: detect)."""
    if mode is not None:
        return get_mode(mode).name
    raw = (os.environ if environ is None else environ).get(MODE_ENV, "").strip()
    if not raw:
        return None
    try:
        return get_mode(raw).name
    except UnknownModeError as exc:
        raise UnknownModeError(f"${MODE_ENV}: {exc}") from None


def _missing(mode: Mode) -> RuntimeNotFoundError:
    return RuntimeNotFoundError(
        f"mode={mode.name} but {mode.binary!r} not found in PATH; install it in the sandbox "
        f"or choose another mode (argument mode= or ${MODE_ENV})",
        mode=mode.name,
        binaries=(mode.binary,),
    )


def _nothing_found() -> RuntimeNotFoundError:
    looked = ", ".join(f"{m.binary} ({m.name})" for m in MODES.values())
    return RuntimeNotFoundError(
        f"no supported runtime found in the sandbox: looked in PATH for {looked}; install one "
        "of them or set the mode explicitly",
        mode=None,
        binaries=tuple(m.binary for m in MODES.values()),
    )


async def health(sandbox: Sandbox, mode: str | None = None) -> Health:
    """The active mode (argument, `$SANDLOT_MODE` or detected) and its runtime's version.

    One round trip. Raises `RuntimeNotFoundError` when the mode's runtime is missing, or, when
    detecting, when none of python3, go, node, bash is on the sandbox's PATH.
    """
    name = configured_mode(mode)
    candidates = [MODES[name]] if name is not None else list(MODES.values())
    probe = script.render_probe([(m.name, m.binary, m.version_command) for m in candidates])
    result = await sandbox.exec(probe, timeout=PROBE_TIMEOUT, max_output=64 << 10)
    lines = result.stdout.splitlines()
    if result.exit_code == script.MISSING_STATUS and not lines:
        raise _missing(candidates[0]) if name is not None else _nothing_found()
    if not result.ok or not lines or lines[0] not in MODES:
        raise CommandFailed(
            "could not probe the sandbox's runtimes"
            + (" (timed out)" if result.timed_out else ""),
            command="runtime probe",
            exit_code=result.exit_code,
            stderr=result.stderr,
        )
    version = lines[1].strip() if len(lines) > 1 else ""
    if not version:
        found = MODES[lines[0]]
        raise CommandFailed(
            f"mode={found.name}: {found.binary} is on PATH but {found.version_command!r} printed "
            "nothing; the runtime looks broken (a version-manager shim without its setup?)",
            command=found.version_command,
            exit_code=result.exit_code,
            stderr=result.stderr,
        )
    return Health(mode=lines[0], runtime_version=version)


async def detect_mode(sandbox: Sandbox) -> str:
    """The first runtime found in the sandbox, in the order python, golang, node, shell."""
    return (await health(sandbox)).mode


def _check_requirements(requirements: Sequence[str]) -> tuple[str, ...]:
    if isinstance(requirements, str):
        raise ConfigurationError(
            "requirements must be a list of package specifiers, not one string; "
            f"write [{requirements!r}]"
        )
    checked: list[str] = []
    for req in requirements:
        if not isinstance(req, str) or not req.strip():
            raise ConfigurationError(f"requirement must be a non-empty string, got {req!r}")
        req = req.strip()
        if req.startswith("-"):
            raise ConfigurationError(
                f"requirement {req!r} looks like an installer option; only package "
                "specifiers are accepted (e.g. 'six' or 'idna>=3')"
            )
        if any(c in req for c in "\0\n\r") or len(req) > _MAX_REQUIREMENT:
            raise ConfigurationError(
                f"requirement {req[:40]!r}... is not a package specifier (no newlines or NUL, "
                f"at most {_MAX_REQUIREMENT} characters)"
            )
        checked.append(req)
    return tuple(checked)


async def run_code(
    sandbox: Sandbox,
    code: str | bytes,
    mode: str | None = None,
    requirements: Sequence[str] = (),
    timeout: float | None = None,
    *,
    env: Mapping[str, EnvValue] | None = None,
    on_stdout: Callable[[str], None] | None = None,
    on_stderr: Callable[[str], None] | None = None,
    max_output: int = DEFAULT_MAX_OUTPUT,
    scrub: bool = False,
) -> RunResult:
    """Write `code` to a fresh file with the mode's extension in the sandbox and run it.

    `timeout` bounds the whole run, requirements install included. A program that fails
    (syntax error, compile error, non-zero exit) is a normal `RunResult` with its stderr; errors
    are raised only for what is not the program's doing: `RequirementsInstallError` (the code
    did not run), `RuntimeNotFoundError`, `UnknownModeError`, `ConfigurationError`.
    `scrub=True`: the output has the sandbox's secrets replaced (see `Sandbox.exec`).
    """
    reqs = _check_requirements(requirements)
    if not isinstance(code, str | bytes):
        raise ConfigurationError(f"code must be str or bytes, got {type(code).__name__}")
    name = configured_mode(mode)
    if name is None:
        name = await detect_mode(sandbox)
    spec = MODES[name]
    run_dir = f"{sandbox.worktree}/{RUNS_DIR}/{uuid.uuid4().hex[:16]}"
    source = f"{run_dir}/main{spec.extension}"
    program = script.render_run(
        binary=spec.binary,
        run_dir=run_dir,
        source=source,
        run=spec.run_line(source, run_dir),
        install=spec.installer,
        requirements=reqs,
    )
    run_env: dict[str, EnvValue] = dict(env or {})
    if name == "python":
        run_env.setdefault("PYTHONUNBUFFERED", "1")
    finished = False
    try:
        raw = await sandbox.exec(
            program,
            stdin=code,
            env=run_env,
            timeout=timeout,
            on_stdout=on_stdout,
            on_stderr=script.strip_markers(on_stderr),
            max_output=max_output,
            scrub=scrub,
        )
        finished = not raw.timed_out
    finally:
        if not finished:
            await _remove(sandbox, run_dir)
    return _result(raw, spec, source, reqs)


async def _remove(sandbox: Sandbox, run_dir: str) -> None:
    # A killed run never reached its own cleanup (the EXIT trap); do it from here.
    with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
        await sandbox.exec(["rm", "-rf", "--", run_dir], timeout=30)


def _result(raw: ExecResult, spec: Mode, source: str, reqs: tuple[str, ...]) -> RunResult:
    parsed = script.parse_stderr(raw.stderr)
    trailer = parsed.trailer
    display = spec.display(source)
    if trailer is not None and trailer.kind == "missing":
        raise _missing(spec)
    if trailer is not None and trailer.kind == "install-failed":
        tool = {"uv": "uv pip install", "pip": "python3 -m pip install", "npm": "npm install"}
        how = tool.get(trailer.installer, "no installer available")
        raise RequirementsInstallError(
            f"installing requirements for mode={spec.name} failed ({how}, exit status "
            f"{trailer.status}); the code was not run. Requirements: {', '.join(reqs)}",
            command=how,
            exit_code=trailer.status,
            stderr=parsed.stderr,
            installer=trailer.installer,
            requirements=reqs,
        )
    started = parsed.started or raw.stderr_truncated
    if trailer is None and not raw.timed_out and not started:
        raise CommandFailed(
            f"could not prepare the run directory for mode={spec.name}",
            command=display,
            exit_code=raw.exit_code,
            stderr=parsed.stderr,
        )
    notes: list[str] = []
    installer = trailer.installer if trailer is not None and trailer.installer != "none" else None
    if reqs and not spec.installer:
        notes.append(f"requirements are ignored in {spec.name} mode")
    if installer == "pip":
        notes.append("uv not found; installed requirements with python3 -m pip")
    if raw.timed_out and reqs and spec.installer and not started:
        notes.append("timed out while installing requirements; the code did not start")
    return RunResult(
        command=display,
        exit_code=raw.exit_code,
        stdout=raw.stdout,
        stderr=parsed.stderr,
        duration=raw.duration,
        timed_out=raw.timed_out,
        stdout_truncated=raw.stdout_truncated,
        stderr_truncated=raw.stderr_truncated,
        mode=spec.name,
        installer=installer,
        notes=tuple(notes),
    )


__all__ = [
    "MODES",
    "MODE_ENV",
    "Health",
    "Mode",
    "RunResult",
    "configured_mode",
    "detect_mode",
    "get_mode",
    "health",
    "run_code",
]
