"""The fake deployment's state: one JSON file in a directory, guarded by a file lock.

Every `coder` invocation is a short-lived process, so the "server" lives on disk: readers load
the file (writes are atomic renames, so a reader never sees half a file), writers hold an
exclusive `flock` on a sibling lock file for the whole read-modify-write. Standard library only:
this module is imported on every CLI call and must stay cheap.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

    State = dict[str, Any]

STATE_FILE = "state.json"
LOCK_FILE = "state.lock"
HOME_ENV = "SANDLOT_FAKE_CODER_HOME"
STATE_VERSION = 1

# Unix socket paths are limited to 108 bytes (sun_path); agent sockets need a short directory.
_MAX_SOCKET_PATH = 100


class StateMissingError(RuntimeError):
    """The directory holds no fake deployment (FakeCoderDeployment was never created there)."""


def new_id() -> str:
    """A random (version 4) UUID string, the identifier format of every coder object."""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    text = raw.hex()
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def now() -> float:
    """Wall-clock seconds; stored as floats and formatted only on output."""
    return time.time()


def rfc3339(ts: float | None) -> str | None:
    """Format like Go's time.Time JSON (RFC 3339, UTC, fractional digits without trailing zeros).

    Postgres keeps microseconds, so coder's timestamps never carry more than six digits.
    """
    if ts is None:
        return None
    seconds = int(ts)
    micros = round((ts - seconds) * 1_000_000)
    if micros == 1_000_000:
        seconds, micros = seconds + 1, 0
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
    frac = f"{micros:06d}".rstrip("0")
    return f"{text}.{frac}Z" if frac else f"{text}Z"


def state_path(root: Path) -> Path:
    return root / STATE_FILE


def load(root: Path) -> State:
    """Read the state without locking (safe: writers replace the file atomically)."""
    try:
        text = state_path(root).read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise StateMissingError(f"no fake coder deployment in {root}") from exc
    data: State = json.loads(text)
    return data


def save(root: Path, state: State) -> None:
    """Write the whole state atomically (temp file in the same directory, then rename)."""
    tmp = root / f".state-{os.getpid()}-{os.urandom(4).hex()}.json"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle, indent=1, sort_keys=False)
        os.replace(tmp, state_path(root))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def locked(root: Path) -> Iterator[State]:
    """Hold the deployment lock, yield the state, and save it when the block ends normally."""
    lock_fd = os.open(root / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        state = load(root)
        yield state
        save(root, state)
    finally:
        os.close(lock_fd)  # closing the descriptor releases the flock


def runtime_dir_for(root: Path) -> Path:
    """Where agent sockets live: under the root when the path is short enough, else in /tmp."""
    candidate = root / "run"
    if len(str(candidate / (new_id() + ".sock"))) <= _MAX_SOCKET_PATH:
        candidate.mkdir(mode=0o700, exist_ok=True)
        return candidate
    import tempfile

    return Path(tempfile.mkdtemp(prefix="sfc-"))


# --- processes -------------------------------------------------------------------------------


def _proc_stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    # Field 2 (comm) is parenthesised and may contain spaces: split after the last ')'.
    tail = raw[raw.rfind(")") + 2 :].split()
    return tail  # tail[0] is field 3 (state); tail[19] is field 22 (starttime)


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of a process (clock ticks since boot), to tell pid reuse apart."""
    tail = _proc_stat(pid)
    if tail is None or len(tail) < 20:
        return None
    return int(tail[19])


def process_alive(pid: int | None, start_time: int | None) -> bool:
    """True when the process exists, is no zombie, and is the one we started (same start time)."""
    if not pid:
        return False
    tail = _proc_stat(pid)
    if tail is None:
        return False
    if tail[0] in ("Z", "X"):
        return False
    return start_time is None or int(tail[19]) == start_time


def terminate(pid: int | None, start_time: int | None, grace: float = 2.0) -> None:
    """Stop one of our agent processes: SIGTERM, wait for it, then SIGKILL. Never a stranger."""
    import signal

    if not process_alive(pid, start_time):
        return
    assert pid is not None
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not process_alive(pid, start_time):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and process_alive(pid, start_time):
        time.sleep(0.02)


# --- lookups ---------------------------------------------------------------------------------


def me(state: State) -> dict[str, Any]:
    """The user the deployment's session tokens belong to."""
    user: dict[str, Any] = state["users"][0]
    return user


def user_by_ref(state: State, ref: str, current: dict[str, Any]) -> dict[str, Any] | None:
    """Resolve 'me', a username or a user id, like coderd's user path parameter."""
    if ref == "me":
        return current
    for user in state["users"]:
        if user["username"].lower() == ref.lower() or user["id"] == ref:
            found: dict[str, Any] = user
            return found
    return None


def live_workspaces(state: State) -> list[dict[str, Any]]:
    return [ws for ws in state["workspaces"].values() if not ws.get("deleted")]


def find_workspace(state: State, owner_id: str, name: str) -> dict[str, Any] | None:
    for ws in live_workspaces(state):
        if ws["owner_id"] == owner_id and ws["name"].lower() == name.lower():
            return ws
    return None
