"""What a smoke run found: per-backend and per-scenario results, the JSON report, the table.

The JSON shape (schema 1) is what tests/dogfood asserts and what tools reading old reports rely
on; add fields freely, but rename or remove one only with a new `schema` number.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from sandlot.secrets import GLOBAL

from . import REPORT_SCHEMA

Status = Literal["passed", "failed", "skipped"]


@dataclass
class ScenarioResult:
    """One scenario on one backend."""

    backend: str
    scenario: str
    status: Status
    duration: float
    """Seconds, wall clock, including the sandbox calls the scenario made."""
    error: str | None = None
    """`Type: message` of what failed, or why it was skipped; None when it passed."""
    details: dict[str, Any] = field(default_factory=dict)
    """What the scenario measured or saw (counts, checksums, modes, workspace states)."""


@dataclass
class BackendResult:
    """Whether a backend ran, and if not, why."""

    name: str
    status: Literal["ran", "skipped"]
    reason: str | None = None
    """Why it was skipped, in words that say what to do about it."""
    details: dict[str, Any] = field(default_factory=dict)
    """How it was reached (engine address, image, deployment URL, template), versions."""


@dataclass
class Report:
    """A whole smoke run."""

    started_at: str
    finished_at: str = ""
    duration: float = 0.0
    versions: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    backends: list[BackendResult] = field(default_factory=list)
    scenarios: list[ScenarioResult] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        counts = {"passed": 0, "failed": 0, "skipped": 0}
        for result in self.scenarios:
            counts[result.status] += 1
        return counts

    @property
    def failed(self) -> bool:
        return any(r.status == "failed" for r in self.scenarios)

    @property
    def skipped_anything(self) -> bool:
        return any(r.status == "skipped" for r in self.scenarios) or any(
            b.status == "skipped" for b in self.backends
        )

    def to_json(self) -> dict[str, Any]:
        """The report as JSON; every secret a sandbox of this run was given shows as
        [secret:NAME]."""
        return GLOBAL.scrubber.value({
            "schema": REPORT_SCHEMA,
            "started_at": self.started_at,
            "finished_at": self.finished_at,
            "duration": round(self.duration, 3),
            "ok": not self.failed,
            "summary": self.counts(),
            "versions": self.versions,
            "options": self.options,
            "backends": [asdict(b) for b in self.backends],
            "scenarios": [
                {**asdict(s), "duration": round(s.duration, 3)} for s in self.scenarios
            ],
        })


def write_report(report: Report, path: Path) -> Path:
    """Write the report as indented JSON, atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.to_json(), indent=2, sort_keys=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.2f}s"
    if seconds < 120:
        return f"{seconds:.1f}s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _one_line(text: str | None, limit: int) -> str:
    if not text:
        return ""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def summary_table(report: Report, *, width: int = 110) -> str:
    """The human summary: one row per scenario, one per skipped backend, then the totals."""
    rows: list[tuple[str, str, str, str, str]] = []
    for result in report.scenarios:
        note = result.error if result.status != "passed" else result.details.get("summary", "")
        rows.append(
            (result.backend, result.scenario, result.status.upper()
             if result.status == "failed" else result.status,
             format_duration(result.duration), str(note or ""))
        )  # fmt: skip
    for backend in report.backends:
        if backend.status == "skipped":
            rows.append((backend.name, "(backend)", "skipped", "-", backend.reason or ""))
    header = ("backend", "scenario", "result", "time", "note")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    note_width = max(20, width - sum(widths) - 8)
    lines = []
    for row in [header, *rows]:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        lines.append("  ".join([*cells, _one_line(row[4], note_width)]).rstrip())
    lines.insert(1, "  ".join("-" * w for w in [*widths, 4]))
    ran = [b.name for b in report.backends if b.status == "ran"]
    skipped = [b.name for b in report.backends if b.status == "skipped"]
    counts = report.counts()
    lines.append("")
    lines.append(
        f"backends: {len(ran)} ran ({', '.join(ran) or 'none'}), {len(skipped)} skipped"
        f"{' (' + ', '.join(skipped) + ')' if skipped else ''}; scenarios: "
        f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped "
        f"in {format_duration(report.duration)}"
    )
    return GLOBAL.scrubber.text("\n".join(lines))
