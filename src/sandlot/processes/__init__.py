"""Durable processes: commands that outlive the connection and the program that started them.

`sandbox.processes.start(cmd)` runs `cmd` detached in the sandbox, with its output in bounded
files there and its exit status recorded; `sandbox.processes.get(id)` reattaches to it from any
program attached to the same sandbox. See `DurableProcesses`.
"""

from .models import DurableProcessInfo, EndedBy, OutputChunk, ProcessState
from .parse import ProcessRecordError
from .process import DurableProcess
from .registry import DurableProcesses
from .watch import DEFAULT_PATTERNS, ProcessEvent

__all__ = [
    "DEFAULT_PATTERNS",
    "DurableProcess",
    "DurableProcessInfo",
    "DurableProcesses",
    "EndedBy",
    "OutputChunk",
    "ProcessEvent",
    "ProcessRecordError",
    "ProcessState",
]
