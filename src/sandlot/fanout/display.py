"""The terminal view of a fan-out: a live table while it runs, a summary table after.

On a terminal, `rich` redraws one row per sandbox (stage, elapsed time, sandbox name, what went
wrong) a few times a second. Anywhere else (a pipe, a CI log) the same events are printed as
one line each, since a redrawn table would only be noise there.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from ..cli import error_text
from ..errors import CommandFailed, CommandTimedOut, SandlotError
from ..secrets import GLOBAL
from .models import FanoutEvent, FanoutReport, SandboxOutcome, Slot, Stage

_STYLE = {
    Stage.QUEUED: "dim",
    Stage.CREATING: "yellow",
    Stage.READY: "cyan",
    Stage.RUNNING: "blue",
    Stage.CLOSING: "magenta",
    Stage.DONE: "green",
    Stage.FAILED: "bold red",
    Stage.CANCELLED: "red",
}


class _Row:
    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.stage = Stage.QUEUED
        self.sandbox: str | None = None
        self.since = time.monotonic()
        self.ended: float | None = None
        self.note = ""


class LiveView:
    """Receives fan-out events (`on_event`) and shows them; use as a context manager."""

    def __init__(self, slots: Sequence[Slot], console: Console, *, quiet: bool = False) -> None:
        self.console = console
        self.quiet = quiet
        self.rows = [_Row(slot) for slot in slots]
        self.started = time.monotonic()
        self._live: Live | None = None

    def __enter__(self) -> LiveView:
        if self.console.is_terminal and not self.quiet:
            self._live = Live(
                get_renderable=self.table, console=self.console, refresh_per_second=4,
                transient=True,
            )
            self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)
            self._live = None

    def on_event(self, event: FanoutEvent) -> None:
        row = self.rows[event.slot.index]
        row.stage = event.stage
        row.sandbox = event.sandbox or row.sandbox
        if event.stage in (Stage.CREATING, Stage.RUNNING):
            row.since = time.monotonic()
        if event.stage.final:
            row.ended = time.monotonic()
        if event.error is not None:
            row.note = describe_error(event.error)
        if self._live is None and not self.quiet:
            where = f" {row.sandbox}" if row.sandbox else ""
            note = (f": {row.note.replace(chr(10), ' | ')}"
                    if row.note and event.stage is Stage.FAILED else "")
            self.console.print(
                f"sandlot: [{event.slot.index}] {event.slot.label}{where} {event.stage.value} "
                f"({event.elapsed:.1f}s){note}",
                markup=False, highlight=False,
            )

    def table(self) -> Table:
        now = time.monotonic()
        done = sum(1 for row in self.rows if row.stage.final)
        table = Table(
            title=f"fan-out: {done}/{len(self.rows)} finished, {now - self.started:.0f}s",
            expand=False, **_COMPACT,
        )
        _columns(table, ("#", "label", "stage", "in stage", "sandbox"), "note")
        for row in self.rows:
            spent = (row.ended or now) - row.since
            table.add_row(
                str(row.slot.index),
                Text(row.slot.label),
                Text(row.stage.value, style=_STYLE[row.stage]),
                "" if row.stage is Stage.QUEUED else f"{spent:.1f}s",
                Text(row.sandbox or ""),
                Text(row.note),
            )
        return table


def summary(report: FanoutReport, extra: dict[int, dict[str, Any]] | None = None) -> Table:
    """One row per sandbox: how it ended, its timings, and its exit code when there is one."""
    table = Table(title=_title(report), **_COMPACT)
    _columns(table, ("#", "label", "result", "exit", "create", "job", "close", "sandbox"), "error")
    for outcome in report.outcomes:
        info = (extra or {}).get(outcome.index, {})
        exit_code = info.get("exit_code")
        table.add_row(
            str(outcome.index),
            Text(outcome.label),
            Text(outcome.stage.value, style=_STYLE[outcome.stage]),
            "" if exit_code is None else str(exit_code),
            _seconds(outcome.timings.create),
            _seconds(outcome.timings.job),
            _seconds(outcome.timings.close),
            Text(outcome.sandbox or ""),
            Text("" if outcome.error is None else describe_error(outcome.error)),
        )
    return table


def _columns(table: Table, short: Sequence[str], text: str) -> None:
    """Short columns keep their width (never crushed to `lab`, `re`); a sandbox name (long on
    some backends) folds; the text column takes what is left and wraps its lines."""
    for column in short:
        table.add_column(column, no_wrap=column != "sandbox", min_width=len(column),
                         overflow="fold")
    table.add_column(text, no_wrap=False, overflow="fold", min_width=MIN_TEXT)


def leftovers(outcomes: Sequence[SandboxOutcome]) -> list[str]:
    """Lines naming each sandbox that may be left, and how to find it afterwards."""
    lines: list[str] = []
    for outcome in outcomes:
        if outcome.sandbox is None or outcome.closed:
            continue
        hint = {
            "docker": "`sandlot gc --dry-run` lists it (label sandlot.managed)",
            "coder": "`coder list` shows it; `coder delete` removes it",
            "local": "a directory on this host; remove it by hand",
        }.get(outcome.provider, "check the backend")
        lines.append(
            f"  [{outcome.index}] {outcome.label}: {outcome.provider} {outcome.sandbox} "
            f"(on_close={outcome.on_close}): {hint}"
        )
    return lines


def _title(report: FanoutReport) -> str:
    counts: dict[str, int] = {}
    for outcome in report.outcomes:
        counts[outcome.stage.value] = counts.get(outcome.stage.value, 0) + 1
    parts = ", ".join(f"{count} {stage}" for stage, count in sorted(counts.items()))
    state = "cancelled" if report.cancelled else "finished"
    return f"fan-out {state} in {report.duration:.1f}s: {parts}"


def _seconds(value: float | None) -> str:
    return "" if value is None else f"{value:.1f}s"


#: Narrowest the error column gets: without a frame the table still fits 80 columns.
MIN_TEXT = 16
#: No frame, no outer padding (columns apart by two spaces, a bold header): the room a frame
#: takes is the error column's on an 80-column terminal.
_COMPACT: dict[str, Any] = {"box": None, "pad_edge": False, "header_style": "bold"}
#: Lines of a failed command's stderr shown under its exit status, and characters per line.
TAIL_LINES = 3
TAIL_WIDTH = 200


def describe_error(error: BaseException, limit: int = 120) -> str:
    """What went wrong, for a table cell: a failed command's status and the last lines of its
    stderr (the sandbox, and so the rest of it, may be gone by the time anyone looks)."""
    if isinstance(error, CommandTimedOut | CommandFailed):
        head = ("timed out" if isinstance(error, CommandTimedOut)
                else f"exit status {error.exit_code}")
        lines = [line.rstrip() for line in error.stderr.splitlines() if line.strip()]
        tail = [line if len(line) <= TAIL_WIDTH else line[: TAIL_WIDTH - 3] + "..."
                for line in lines[-TAIL_LINES:]]
        return "\n".join([head, *tail])
    words = error_text(error) if isinstance(error, SandlotError) else str(error)
    # A job's own exception was never redacted: it may hold a secret it was given.
    words = GLOBAL.scrubber.text(words)
    text = f"{type(error).__name__}: {words.splitlines()[0] if words else ''}"
    return text if len(text) <= limit else text[: limit - 3] + "..."
