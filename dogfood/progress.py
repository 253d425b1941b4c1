"""Progress on stderr while a run works: one line per backend decision, two per scenario.

The lines are the same in a terminal, a CI log or a file; on a terminal a spinner also shows
the scenario that is running and for how long (rich, through sandlot.progress).
"""

from __future__ import annotations

import time
from typing import TextIO

from rich.console import Console
from rich.status import Status

from sandlot import progress

from .report import format_duration

_MARK = {"passed": "ok", "failed": "FAILED", "skipped": "skipped"}


class Progress:
    """Writes `[backend] scenario ...` lines; `quiet` silences everything but failures."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False) -> None:
        self.console = progress.console() if stream is None else Console(
            file=stream, highlight=False, width=progress.LOG_WIDTH
        )
        self.quiet = quiet
        self._started = time.monotonic()
        self._status: Status | None = None

    def _write(self, text: str) -> None:
        elapsed = time.monotonic() - self._started
        progress.say(self.console, f"{elapsed:7.1f}s {text}")

    def _spin(self, text: str | None) -> None:
        """On a terminal: show `text` under a spinner until the next call (None: stop)."""
        if not self.console.is_terminal or self.quiet:
            return
        if text is None:
            if self._status is not None:
                self._status.stop()
                self._status = None
            return
        if self._status is None:
            self._status = self.console.status(text, spinner="dots")
            self._status.start()
        else:
            self._status.update(text)

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
            self._spin(f"[{backend}] {scenario}")

    def step(self, backend: str, scenario: str, text: str) -> None:
        """A sub-step of a long scenario (workspace created, mode run, ...)."""
        if not self.quiet:
            self._write(f"[{backend}] {scenario}: {text}")
            self._spin(f"[{backend}] {scenario}: {text}")

    def scenario_end(
        self, backend: str, scenario: str, status: str, duration: float, note: str
    ) -> None:
        self._spin(None)
        if self.quiet and status != "failed":
            return
        tail = f" -- {note}" if note else ""
        mark = _MARK.get(status, status)
        self._write(f"[{backend}] {scenario} {mark} ({format_duration(duration)}){tail}")
