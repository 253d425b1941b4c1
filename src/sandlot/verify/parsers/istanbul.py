"""istanbul's JSON report (`coverage-final.json`: c8, nyc, jest, vitest) -> line hits.

Lines as istanbul itself counts them for its `lines` summary (FileCoverage.getLineCoverage):
the start line of every statement, with the highest count of the statements starting there.
"""

from __future__ import annotations

import json
from typing import Any

from ..coverage import LineHits
from .paths import relative


def parse(report: str, *, root: str) -> LineHits:
    data: Any = json.loads(report)
    hits: LineHits = {}
    for name, entry in data.items():
        statements = entry.get("statementMap") or {}
        counts = entry.get("s") or {}
        lines: dict[int, int] = {}
        for key, count in counts.items():
            where = statements.get(key)
            if where is None:
                continue
            line = int(where["start"]["line"])
            lines[line] = max(lines.get(line, 0), int(count))
        hits[relative(entry.get("path") or name, root)] = lines
    return hits
