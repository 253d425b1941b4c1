"""Progress lines on stderr while a run works: one per backend decision, two per scenario.

Plain lines (no cursor tricks), so they read the same in a terminal, a CI log or a file.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .report import format_duration

_MARK = {"passed": "ok", "failed": "FAILED", "skipped": "skipped"}


class Progress:
    """Writes `[backend] scenario ...` lines; `quiet` silences everything but failures."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.quiet = quiet
        self._started = time.monotonic()

    def _write(self, text: str) -> None:
        elapsed = time.monotonic() - self._started
        self.stream.write(f"{elapsed:7.1f}s {text}\n")
        self.stream.flush()

    def info(self, text: str) -> None:
        if not self.quiet:
            self._write(f"dogfood: {text}")

    def backend_skipped(self, name: str, reason: str) -> None:
        self._write(f"[{name}] skipped: {reason}")

    def backend_start(self, name: str, how: str) -> None:
        if not self.quiet:
            self._write(f"[{name}] running on {how}")

    def scenario_start(self, backend: str, scenario: str) -> None:
        if not self.quiet:
            self._write(f"[{backend}] {scenario} ...")

    def step(self, backend: str, scenario: str, text: str) -> None:
        """A sub-step of a long scenario (workspace created, mode run, ...)."""
        if not self.quiet:
            self._write(f"[{backend}] {scenario}: {text}")

    def scenario_end(
        self, backend: str, scenario: str, status: str, duration: float, note: str
    ) -> None:
        if self.quiet and status != "failed":
            return
        tail = f" -- {note}" if note else ""
        mark = _MARK.get(status, status)
        self._write(f"[{backend}] {scenario} {mark} ({format_duration(duration)}){tail}")
