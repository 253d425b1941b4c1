"""File-system change events from inside a sandbox: `sandbox.watch(path)` (adr/0052)."""

from .watch import DEFAULT_QUEUE, FileEvent, FileWatch

__all__ = ["DEFAULT_QUEUE", "FileEvent", "FileWatch"]
