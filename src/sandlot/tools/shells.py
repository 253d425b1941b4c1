"""Background shells of the bash tool: durable processes, read incrementally, killed.

A background shell is a durable process (`sandlot.processes`): it survives a dropped
connection, and its id is the process's, so a toolbox attached to the same sandbox later (a
restarted MCP server) reads it on. Each shell keeps the byte cursor of what was already shown
and an incremental UTF-8 decoder, so a character split between two reads comes out whole.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field

from ..processes import DurableProcess, DurableProcessInfo
from .models import ShellStatus


def _decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")("replace")


@dataclass
class Shell:
    """One background command started (or found) by the bash tool."""

    process: DurableProcess
    command: str
    workspace: str
    cursor: int = 0
    killed: bool = False
    decoder: codecs.IncrementalDecoder = field(default_factory=_decoder)

    @property
    def id(self) -> str:
        return self.process.id

    def status(self, info: DurableProcessInfo) -> ShellStatus:
        if info.state == "running":
            return "running"
        if info.state == "lost":
            return "lost"
        if self.killed:
            return "killed"
        return "timed_out" if info.ended_by is not None else "exited"


class ShellRegistry:
    """The background shells a toolbox knows, by id."""

    def __init__(self) -> None:
        self._shells: dict[str, Shell] = {}

    def add(self, shell: Shell) -> Shell:
        self._shells[shell.id] = shell
        return shell

    def get(self, shell_id: str) -> Shell | None:
        return self._shells.get(shell_id.strip())

    @property
    def ids(self) -> list[str]:
        return list(self._shells)

    def all(self) -> list[Shell]:
        return list(self._shells.values())
