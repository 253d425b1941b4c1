"""`mypy -O json` (one JSON object per line) into findings."""

from __future__ import annotations

import json

from ..findings import Finding, Severity
from .paths import relative

_SEVERITY: dict[str, Severity] = {"error": "error", "warning": "warning", "note": "info"}


def parse(stdout: str, *, root: str) -> list[Finding]:
    findings = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            item = json.loads(line)
        except ValueError:
            continue
        severity = _SEVERITY.get(str(item.get("severity", "error")), "error")
        if severity == "info":
            # Notes explain the error before them; they are not problems of their own.
            continue
        line_no = item.get("line")
        column = item.get("column")
        findings.append(
            Finding(
                file=relative(str(item.get("file", "")), root),
                line=line_no if isinstance(line_no, int) and line_no > 0 else None,
                # mypy's JSON column is 0-based; every Finding column is 1-based.
                column=column + 1 if isinstance(column, int) and column >= 0 else None,
                rule=str(item.get("code") or ""),
                severity=severity,
                message=str(item.get("message", "")),
                tool="mypy",
            )
        )
    return findings
