"""coverage.py's JSON report (`coverage json`, pytest-cov's `--cov-report=json`) -> line hits.

Each file lists its `executed_lines` and `missing_lines` (statements; excluded lines are in
neither). The JSON has no counts: a line that ran is 1.
"""

from __future__ import annotations

import json
from typing import Any

from ..coverage import LineHits
from .paths import relative


def parse(report: str, *, root: str) -> LineHits:
    data: Any = json.loads(report)
    hits: LineHits = {}
    for name, entry in (data.get("files") or {}).items():
        lines = {int(n): 0 for n in entry.get("missing_lines", [])}
        lines.update({int(n): 1 for n in entry.get("executed_lines", [])})
        hits[relative(name, root)] = lines
    return hits
