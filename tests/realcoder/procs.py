"""Process plumbing for the real-Coder harness: spawn, wait, and stop for good.

Every child is started through `setpriv --pdeathsig`, so if the test process dies
without running its cleanup (SIGKILL, a hard timeout) the kernel still signals the
children; a normal stop also sweeps every descendant, so nothing is left running.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from sandlot._process_group import signal_group

T = TypeVar("T")


@dataclass(frozen=True)
class Account:
    """An unprivileged account to run a server as (PostgreSQL refuses to run as root)."""

    name: str
    uid: int
    gid: int


def unprivileged_account() -> Account | None:
    """`nobody` when we are root, else None (we already are unprivileged)."""
    if os.geteuid() != 0:
        return None
    entry = pwd.getpwnam("nobody")
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


def wait_until(
    probe: Callable[[], T | None],
    *,
    timeout: float,
    what: str,
    interval: float = 0.2,
    alive: Callable[[], str | None] | None = None,
) -> T:
    """Poll `probe` until it returns something other than None.

    `alive` (optional) returns an error text when the thing we wait on has died,
    so a crashed server fails fast instead of after the whole timeout.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value is not None:
            return value
        if alive is not None:
            problem = alive()
            if problem is not None:
                raise RuntimeError(f"while waiting for {what}: {problem}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not ready after {timeout:.0f}s")
        time.sleep(interval)


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, start time) for every process we can see."""
    table: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces: split after it.
        rest = stat.rsplit(")", 1)[1].split()
        table[int(entry)] = (int(rest[1]), rest[19])
    return table


def descendants(pid: int) -> dict[int, str]:
    """Every live descendant of `pid`, with its start time (to survive pid reuse)."""
    table = _proc_table()
    children: dict[int, list[int]] = {}
    for child, (parent, _) in table.items():
        children.setdefault(parent, []).append(child)
    found: dict[int, str] = {}
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop()
        if p in found:
            continue
        found[p] = table[p][1]
        todo.extend(children.get(p, []))
    return found


def _kill_if_same(pid: int, start_time: str) -> None:
    entry = _proc_table().get(pid)
    if entry is not None and entry[1] == start_time:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@dataclass
class Service:
    """One long-running child process whose output goes to a log file."""

    name: str
    argv: Sequence[str]
    env: Mapping[str, str]
    log_path: Path
    cwd: Path | None = None
    account: Account | None = None
    stop_signal: signal.Signals = signal.SIGTERM
    proc: subprocess.Popen[bytes] | None = field(default=None, init=False)

    def start(self) -> Service:
        prefix = ["setpriv", "--pdeathsig", self.stop_signal.name.removeprefix("SIG")]
        if self.account is not None:
            prefix += [
                f"--reuid={self.account.uid}",
                f"--regid={self.account.gid}",
                "--clear-groups",
            ]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(
                [*prefix, "--", *self.argv],
                env=dict(self.env),
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        return self

    def exited(self) -> str | None:
        """None while running, else a description with the end of the log."""
        if self.proc is None or self.proc.poll() is None:
            return None
        return f"{self.name} exited with {self.proc.returncode}; log tail:\n{self.log_tail()}"

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, grace: float = 15.0) -> None:
        """Signal, wait up to `grace` seconds, then kill it and every descendant."""
        proc = self.proc
        if proc is None:
            return
        family = descendants(proc.pid)
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(self.stop_signal)
            deadline = time.monotonic() + grace
            # Keep collecting descendants while it shuts down: children that
            # outlive it are reparented and would be forgotten otherwise.
            while proc.poll() is None and time.monotonic() < deadline:
                family.update(descendants(proc.pid))
                time.sleep(0.1)
            if proc.poll() is None:
                family.update(descendants(proc.pid))
                proc.kill()
            proc.wait()
        # What is left of its group; a reaped leader's number may be another's by now.
        signal_group(proc.pid, reaped=True)
        for pid, start_time in family.items():
            _kill_if_same(pid, start_time)


def run(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float = 120.0,
    input_bytes: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command and capture its text output (never raises on exit code)."""
    return subprocess.run(
        list(argv),
        env=dict(env),
        input=input_bytes.decode() if input_bytes is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
