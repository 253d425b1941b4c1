"""golangci-lint v2 JSON (`--output.json.path=stdout`) into findings."""

from __future__ import annotations

import json
import re
from typing import Any

from ..findings import Finding, Severity
from .paths import relative

_SEVERITY: dict[str, Severity] = {"error": "error", "warning": "warning", "info": "info"}
# A compile error golangci-lint wraps in a `typecheck` issue placed at line 1 of the file.
_EMBEDDED = re.compile(r"^(\S+\.go):(\d+):(\d+): (.*)$", re.MULTILINE)


def parse(stdout: str, *, root: str) -> list[Finding]:
    data = _report(stdout)
    if data is None:
        return []
    findings = []
    for issue in data.get("Issues") or []:
        pos = issue.get("Pos") or {}
        text = str(issue.get("Text", ""))
        embedded = _EMBEDDED.findall(text) if issue.get("FromLinter") == "typecheck" else []
        if embedded:
            # Report the compiler's own positions rather than the wrapper's "line 1".
            for file, line, column, message in embedded:
                findings.append(
                    Finding(
                        file=relative(file, root),
                        line=int(line),
                        column=int(column),
                        rule="typecheck",
                        message=message.strip(),
                        tool="golangci-lint",
                    )
                )
            continue
        severity = _SEVERITY.get(str(issue.get("Severity") or "").lower(), "error")
        findings.append(
            Finding(
                file=relative(str(pos.get("Filename", "")), root),
                line=pos.get("Line") or None,
                column=pos.get("Column") or None,
                rule=str(issue.get("FromLinter", "")),
                severity=severity,
                message=text,
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
