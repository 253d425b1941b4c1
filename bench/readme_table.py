"""The README's benchmark table, from a results file (default: the full run's latest.json).

    python -m bench.readme_table [bench/results/latest.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .__main__ import RESULTS
from .core import Measurement


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _value(value: float, unit: str) -> str:
    return f"{value:.4g} {unit}"


def machine_line(report: dict[str, Any]) -> str:
    machine = report["machine"]
    load = machine.get("load_avg_at_start", [None])[0]
    loaded = f", load average {load:.1f} at its start" if load is not None else ""
    return (
        f"Run of {report['started']} ({report['duration_s'] / 60:.0f} min): {machine['cpus']} "
        f"vCPUs, {machine.get('memory_gib', '?')} GiB, {machine['platform']}, Python "
        f"{machine['python']}, on a shared machine{loaded}."
    )


def table(report: dict[str, Any]) -> str:
    lines = [
        "| group | backend | sandlot | baseline | sandlot | baseline | ratio | target |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in report["measurements"]:
        m = Measurement(**{k: v for k, v in row.items() if k != "ratio"})
        cells = [m.group, m.backend, m.subject, m.baseline,
                 _value(m.subject_value, m.unit), _value(m.baseline_value, m.unit),
                 f"{m.ratio:.2f}x", m.target]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    path = Path(argv[0]) if argv else RESULTS / "latest.json"
    report = json.loads(path.read_text())
    print(machine_line(report))
    print()
    print(table(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
