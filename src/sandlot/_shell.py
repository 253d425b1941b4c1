"""POSIX shell rendering shared by every backend.

Every backend runs a command as ONE shell line so cwd, env, sudo and the process-group
announcement behave the same everywhere (the contract suite checks them on each backend).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from .errors import ConfigurationError, InvalidEnvError, InvalidPathError

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

#: Exit status the prelude uses when the working directory does not exist (like a shell's 126/127
#: family, but distinct so callers can tell it from the command's own status).
CWD_MISSING_EXIT = 125

#: First stderr line of a command started with `announce_pid=True`; backends strip it.
PID_MARKER = b"\x1esandlot-pid:"


def quote(value: str) -> str:
    """Quote one word for a POSIX shell."""
    return shlex.quote(value)


def validate_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """Check every key is a POSIX name; values may hold any character except NUL."""
    if env is None:
        return {}
    checked: dict[str, str] = {}
    for key, value in env.items():
        if not isinstance(key, str) or not _ENV_NAME.match(key):
            raise InvalidEnvError(
                f"invalid environment variable name {key!r}: names must match "
                "[A-Za-z_][A-Za-z0-9_]* (no '=', spaces or leading digit); rename the variable"
            )
        if not isinstance(value, str):
            raise InvalidEnvError(
                f"environment variable {key} must be a str, got {type(value).__name__}; "
                "convert it with str() first"
            )
        if "\0" in value:
            raise InvalidEnvError(f"environment variable {key} contains a NUL byte; remove it")
        checked[key] = value
    return checked


def validate_seconds(value: float | None, name: str) -> float | None:
    """A time limit is a positive number of seconds, or None for none."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
    ):
        raise ConfigurationError(
            f"{name} must be a positive number of seconds or None, got {value!r}"
        )
    return value


def validate_sandbox_path(path: str, what: str = "sandbox path") -> str:
    """A sandbox path must be an absolute POSIX path (it is never resolved on the host)."""
    if not isinstance(path, str) or not path.startswith("/"):
        raise InvalidPathError(
            f"{what} must be an absolute POSIX path inside the sandbox, got {path!r}; "
            "join it with sandbox.worktree first"
        )
    if "\0" in path:
        raise InvalidPathError(f"{what} contains a NUL byte: {path!r}")
    return path


def to_argv(command: str | Sequence[str]) -> list[str]:
    """A string runs under `sh -c`; a sequence is an argv that sandlot quotes itself."""
    if isinstance(command, str):
        if not command.strip():
            raise ConfigurationError("command is empty; pass a shell string or an argv list")
        return ["sh", "-c", command]
    argv = list(command)
    if not argv:
        raise ConfigurationError("command argv is empty; pass at least the program name")
    for arg in argv:
        if not isinstance(arg, str):
            raise ConfigurationError(
                f"command argv items must be str, got {type(arg).__name__}: {arg!r}"
            )
        if "\0" in arg:
            raise ConfigurationError(f"command argument contains a NUL byte: {arg!r}")
    return argv


def display(argv: Sequence[str]) -> str:
    """How a command is shown in results and errors."""
    if len(argv) == 3 and argv[0] == "sh" and argv[1] == "-c":
        return argv[2]
    return shlex.join(argv)


_EXPORT_VALUE = re.compile(r"export ([A-Za-z_][A-Za-z0-9_]*)=('(?:[^']|'\"'\"')*'|\S+)")


def mask_env_values(line: str) -> str:
    """A rendered command line with every exported value replaced by `***` (for logs)."""
    return _EXPORT_VALUE.sub(r"export \1=***", line)


def render(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    sudo: bool = False,
    announce_pid: bool = False,
    inline: bool = True,
) -> str:
    """One shell line that enters `cwd`, exports `env` and execs `argv` (optionally via sudo);
    a shell string (`["sh", "-c", line]`) is evaluated by that shell itself.

    With `announce_pid`, the shell first writes `PID_MARKER<pid>\\n` to stderr so a remote backend
    learns which process group to end on timeout; `exec` keeps that pid for the command itself.
    """
    parts: list[str] = []
    if announce_pid:
        parts.append("printf '\\036sandlot-pid:%s\\n' \"$$\" >&2")
    parts.append(
        f"cd -- {quote(cwd)} 2>/dev/null || {{ printf '%s\\n' "
        f"{quote(f'sandlot: working directory does not exist: {cwd}')} >&2; "
        f"exit {CWD_MISSING_EXIT}; }}"
    )
    parts.extend(f"export {key}={quote(value)}" for key, value in env.items())
    words = " ".join(quote(a) for a in argv)
    if inline and not sudo and len(argv) == 3 and argv[0] == "sh" and argv[1] == "-c":
        # A shell string runs in this shell (`eval`) rather than in a second `sh -c` it would
        # exec: one shell start fewer per command (about 0.7 ms locally), same exit status and
        # the same `$$`. Not `inline` when the caller wraps the line in a subshell, whose `$$`
        # would be the outer shell's.
        parts.append(f"eval {quote(argv[2])}")
        return "; ".join(parts)
    if sudo:
        # Root needs no sudo (and a container often has none); -n never prompts, -E keeps env.
        parts.append(
            f'if [ "$(id -u)" = 0 ]; then exec {words}; else exec sudo -n -E -- {words}; fi'
        )
    else:
        parts.append(f"exec {words}")
    return "; ".join(parts)
