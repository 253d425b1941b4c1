"""Background shells of the bash tool: started, read incrementally, killed.

Each shell's output is kept as ordered lines (stdout and stderr interleaved as they arrive)
in a bounded buffer; `read_new()` returns what arrived since the previous read.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass, field

from ..sandbox import ExecResult, Process
from .models import ShellStatus

#: Characters of unread output a shell keeps; older lines are dropped (and counted).
BUFFER_CHARS = 256 << 10


@dataclass
class ShellLog:
    """Bounded, ordered output lines of one shell, read incrementally."""

    limit: int = BUFFER_CHARS
    lines: deque[str] = field(default_factory=deque)
    size: int = 0
    dropped: int = 0

    def add(self, line: str, stream: str) -> None:
        text = line if stream == "stdout" else f"[stderr] {line}"
        self.lines.append(text)
        self.size += len(text) + 1
        while self.size > self.limit and len(self.lines) > 1:
            self.size -= len(self.lines.popleft()) + 1
            self.dropped += 1

    def take(self) -> tuple[str, int]:
        """Everything unread, and how many lines were dropped since the last take."""
        text = "\n".join(self.lines)
        dropped = self.dropped
        self.lines.clear()
        self.size = 0
        self.dropped = 0
        return text, dropped


@dataclass
class Shell:
    """One background command started by the bash tool."""

    id: str
    command: str
    workspace: str
    log: ShellLog
    process: Process | None = None
    killed: bool = False

    def status(self, result: ExecResult | None) -> ShellStatus:
        """running / killed / timed_out / exited; `result` once the process is done."""
        if result is None:
            return "running"
        if self.killed:
            return "killed"
        return "timed_out" if result.timed_out else "exited"


class ShellRegistry:
    """The background shells of one toolbox, by id (`shell-1`, `shell-2`, ...)."""

    def __init__(self) -> None:
        self._shells: dict[str, Shell] = {}
        self._ids = itertools.count(1)

    def new(self, command: str, workspace: str) -> Shell:
        shell = Shell(id=f"shell-{next(self._ids)}", command=command, workspace=workspace,
                      log=ShellLog())
        self._shells[shell.id] = shell
        return shell

    def get(self, shell_id: str) -> Shell | None:
        return self._shells.get(shell_id.strip())

    def forget(self, shell_id: str) -> None:
        self._shells.pop(shell_id, None)

    @property
    def ids(self) -> list[str]:
        return list(self._shells)

    def all(self) -> list[Shell]:
        return list(self._shells.values())
