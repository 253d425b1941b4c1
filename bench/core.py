"""What a measurement is, and how to time things fairly on a noisy machine.

Absolute times on a shared 2-core machine drift from run to run; a ratio of two things measured
interleaved in the same run is far steadier. Every result here is such a pair.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from typing import Any


class Unavailable(Exception):
    """A measurement cannot run here (missing engine, missing tool); the reason is reported."""


@dataclass
class Measurement:
    group: str
    backend: str
    subject: str
    baseline: str
    subject_value: float
    baseline_value: float
    unit: str
    target: str = ""
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ratio(self) -> float:
        return self.subject_value / self.baseline_value if self.baseline_value else float("inf")

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["ratio"] = self.ratio
        return data


async def interleaved(
    subject: Callable[[], Awaitable[object]],
    baseline: Callable[[], Awaitable[object]],
    *,
    rounds: int,
    warmup: int = 2,
) -> tuple[float, float]:
    """Median seconds of `subject` and `baseline`, alternating so drift hits both alike."""
    for _ in range(warmup):
        await subject()
        await baseline()
    subject_times: list[float] = []
    baseline_times: list[float] = []
    for i in range(rounds):
        pair = [(subject, subject_times), (baseline, baseline_times)]
        if i % 2:
            pair.reverse()
        for func, sink in pair:
            started = time.perf_counter()
            await func()
            sink.append(time.perf_counter() - started)
    return statistics.median(subject_times), statistics.median(baseline_times)


def format_table(rows: list[Measurement]) -> str:
    headers = ["group", "backend", "sandlot", "baseline", "sandlot", "baseline", "ratio", "target"]
    body = [
        [
            r.group,
            r.backend,
            r.subject,
            r.baseline,
            f"{r.subject_value:.4g} {r.unit}",
            f"{r.baseline_value:.4g} {r.unit}",
            f"{r.ratio:.2f}x",
            r.target,
        ]
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *body, strict=False)]
    lines = [" | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True))]
    lines.append("-|-".join("-" * w for w in widths))
    lines += [" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in body]
    return "\n".join(lines)
