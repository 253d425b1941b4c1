"""The POSIX sh programs behind `sandlot.modes`, and the parser of what they report.

A run is ONE round trip: a single `sh -c` program checks the runtime, writes the code (from
stdin) to a fresh run directory, installs requirements, runs the code, and removes the directory.
It reports to the Python side through marker lines on stderr that start with the ASCII record
separator (`\\x1e`), the same convention as the core's process-group announcement:

* `\\x1esandlot-run` -- the code is about to start (first thing on stderr; install output goes
  to a log file, not to stderr).
* a trailer, always the LAST line of stderr, which survives tail truncation of the output:
  `\\x1esandlot-end:<installer>:<status>`, `\\x1esandlot-install-failed:<installer>:<status>`
  (the installer's log tail precedes it) or `\\x1esandlot-missing:<binary>`.

Everything here is pure (rendering and parsing), so it is unit-tested without a sandbox.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

MARK = "\x1esandlot-"
RUN_MARKER = f"{MARK}run\n"
#: Status the program exits with when the runtime is missing (like a shell's "not found").
MISSING_STATUS = 127
#: How much of the installer's log reaches stderr when it fails (the tail holds the error).
INSTALL_LOG_TAIL = 64 << 10

_TRAILER = re.compile(r"\x1esandlot-(end|install-failed|missing):([^\n]*)\n?\Z")


@dataclass(frozen=True)
class Trailer:
    """The last marker of a run: how it ended, as the sh program saw it."""

    kind: str  # "end" | "install-failed" | "missing"
    installer: str = ""
    status: int = 0
    binary: str = ""


@dataclass(frozen=True)
class Parsed:
    """stderr with sandlot's markers taken out, and what they said."""

    stderr: str
    trailer: Trailer | None
    started: bool


def parse_stderr(stderr: str) -> Parsed:
    """Split a run's captured stderr into the program's own output and sandlot's markers."""
    started = stderr.startswith(RUN_MARKER)
    if started:
        stderr = stderr[len(RUN_MARKER) :]
    trailer: Trailer | None = None
    index = stderr.rfind(MARK)
    if index >= 0:
        match = _TRAILER.match(stderr, index)
        if match is not None:
            trailer = _trailer(match.group(1), match.group(2))
            if trailer is not None:
                stderr = stderr[:index]
    return Parsed(stderr=stderr, trailer=trailer, started=started)


def _trailer(kind: str, payload: str) -> Trailer | None:
    if kind == "missing":
        return Trailer(kind, binary=payload)
    installer, _, status = payload.rpartition(":")
    if not status.lstrip("-").isdigit():
        return None
    return Trailer(kind, installer=installer, status=int(status))


def strip_markers(callback: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Wrap a line callback so it never sees sandlot's marker lines."""
    if callback is None:
        return None

    def filtered(line: str) -> None:
        index = line.find(MARK)
        if index < 0:
            callback(line)
        elif index > 0:
            # The program's last line had no newline, so the trailer was glued to it.
            callback(line[:index])

    return filtered


# ---- rendering ------------------------------------------------------------------------------

q = shlex.quote


def _python_install(deps: str, log: str, requirements: Sequence[str]) -> str:
    reqs = " ".join(q(r) for r in requirements)
    return (
        "if command -v uv >/dev/null 2>&1; then installer=uv\n"
        f'  uv pip install --python "$(command -v python3)" --target {deps} {reqs} >{log} 2>&1\n'
        "elif python3 -m pip --version >/dev/null 2>&1; then installer=pip\n"
        "  python3 -m pip install --disable-pip-version-check --no-input --quiet "
        f"--target {deps} {reqs} >{log} 2>&1\n"
        "else installer=none\n"
        f"  echo 'neither uv nor python3 -m pip is available in the sandbox; install uv "
        f"(pip install uv) or pip for python3' >{log}; false\n"
        "fi\n"
    )


def _node_install(run_dir: str, log: str, requirements: Sequence[str]) -> str:
    reqs = " ".join(q(r) for r in requirements)
    return (
        "if command -v npm >/dev/null 2>&1; then installer=npm\n"
        f"  (cd {run_dir} && npm install --no-audit --no-fund --no-package-lock "
        f"--loglevel=error {reqs}) >{log} 2>&1\n"
        "else installer=none\n"
        f"  echo 'npm not found in PATH; install npm in the sandbox' >{log}; false\n"
        "fi\n"
    )


def render_run(
    *,
    binary: str,
    run_dir: str,
    source: str,
    run: str,
    install: str,
    requirements: Sequence[str],
) -> str:
    """The sh program of one run.

    `run` is the sh line that runs `source` (already quoted); `install` names the installer
    family ("python", "node" or "") and is used only when `requirements` is non-empty.
    """
    d = q(run_dir)
    log = q(f"{run_dir}/.install.log")
    lines = [
        f"command -v {q(binary)} >/dev/null 2>&1 || "
        f"{{ printf '\\036sandlot-missing:%s\\n' {q(binary)} >&2; exit {MISSING_STATUS}; }}",
        f"mkdir -p {d} || exit 1",
        f"trap 'rm -rf {d}' EXIT",
        f"cat > {q(source)} || exit 1",
        "installer=none",
    ]
    if requirements and install:
        if install == "python":
            lines.append(_python_install(q(f"{run_dir}/.deps"), log, requirements))
        else:
            lines.append(_node_install(d, log, requirements))
        lines.append(
            "st=$?; if [ $st -ne 0 ]; then "
            f"tail -c {INSTALL_LOG_TAIL} {log} >&2; "
            "printf '\\036sandlot-install-failed:%s:%s\\n' \"$installer\" \"$st\" >&2; "
            "exit $st; fi"
        )
    lines += [
        "printf '\\036sandlot-run\\n' >&2",
        f"{run} </dev/null",
        "st=$?",
        "printf '\\036sandlot-end:%s:%s\\n' \"$installer\" \"$st\" >&2",
        "exit $st",
    ]
    return "\n".join(lines) + "\n"


def render_probe(candidates: Sequence[tuple[str, str, str]]) -> str:
    """The sh program that finds the first available runtime and prints its mode and version.

    `candidates` are (mode, binary, version command) in priority order. Output: the mode on
    the first line, the version (first line of the version command) on the second.
    """
    lines = []
    for mode, binary, version in candidates:
        lines.append(
            f"if command -v {q(binary)} >/dev/null 2>&1; then "
            f"printf '%s\\n' {q(mode)}; {version} 2>&1 | head -n 1; exit 0; fi"
        )
    lines.append(f"exit {MISSING_STATUS}")
    return "\n".join(lines) + "\n"
