"""`ruff check --output-format=json` into findings."""

from __future__ import annotations

import json
from typing import Any

from ..findings import Finding
from .paths import relative


def parse(stdout: str, *, root: str) -> list[Finding]:
    text = stdout.strip()
    if not text:
        return []
    items: list[dict[str, Any]] = json.loads(text)
    findings = []
    for item in items:
        location = item.get("location") or {}
        findings.append(
            Finding(
                file=relative(str(item.get("filename", "")), root),
                line=location.get("row"),
                column=location.get("column"),
                # A syntax error has no code; ruff calls it a syntax error in the message.
                rule=str(item.get("code") or "syntax-error"),
                severity="error",
                message=str(item.get("message", "")),
                tool="ruff",
            )
        )
    return findings
