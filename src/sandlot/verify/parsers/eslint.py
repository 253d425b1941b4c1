"""`eslint --format json` into findings."""

from __future__ import annotations

import json
from typing import Any

from ..findings import Finding, Severity
from .paths import relative

_SEVERITY: dict[int, Severity] = {1: "warning", 2: "error"}


def parse(report: str, *, root: str) -> list[Finding]:
    text = report.strip()
    if not text:
        return []
    files: list[dict[str, Any]] = json.loads(text)
    findings = []
    for entry in files:
        path = relative(str(entry.get("filePath", "")), root)
        for msg in entry.get("messages", []):
            findings.append(
                Finding(
                    file=path,
                    line=msg.get("line"),
                    column=msg.get("column"),
                    # A parse error has no rule id (ruleId null, fatal true).
                    rule=str(msg.get("ruleId") or ("parse-error" if msg.get("fatal") else "")),
                    severity=_SEVERITY.get(int(msg.get("severity", 2)), "error"),
                    message=str(msg.get("message", "")),
                    tool="eslint",
                )
            )
    return findings
