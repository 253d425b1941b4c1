"""golangci-lint v2 JSON (`--output.json.path=stdout`) into findings."""

from __future__ import annotations

import json
from typing import Any

from ..findings import Finding, Severity
from .paths import relative

_SEVERITY: dict[str, Severity] = {"error": "error", "warning": "warning", "info": "info"}


def parse(stdout: str, *, root: str) -> list[Finding]:
    data = _report(stdout)
    if data is None:
        return []
    findings = []
    for issue in data.get("Issues") or []:
        pos = issue.get("Pos") or {}
        severity = _SEVERITY.get(str(issue.get("Severity") or "").lower(), "error")
        findings.append(
            Finding(
                file=relative(str(pos.get("Filename", "")), root),
                line=pos.get("Line") or None,
                column=pos.get("Column") or None,
                rule=str(issue.get("FromLinter", "")),
                severity=severity,
                message=str(issue.get("Text", "")),
                tool="golangci-lint",
            )
        )
    return findings


def _report(stdout: str) -> dict[str, Any] | None:
    """The JSON object golangci-lint printed (the last line that is one)."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue
            if isinstance(obj, dict):
                return obj
    return None
