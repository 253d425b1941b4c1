"""`go vet -json` diagnostics into findings.

The stream mixes `# package` comment lines with one JSON object per package:
`{"<import path>": {"<analyzer>": [{"posn": "file:line:col", "message": ...}]}}`; a package
that did not type-check carries `{"error": ...}` objects instead, or plain compiler lines.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..findings import Finding
from .paths import relative

_POSN = re.compile(r"^(.*?):(\d+)(?::(\d+))?$")
_COMPILER = re.compile(r"^(?:vet: )?(\.{0,2}/?[^\s:]+\.go):(\d+):(\d+): (.*)$")


def parse(output: str, *, root: str) -> list[Finding]:
    findings: list[Finding] = []
    for obj in _objects(output):
        for analyzers in obj.values():
            if not isinstance(analyzers, dict):
                continue
            for analyzer, diagnostics in analyzers.items():
                if isinstance(diagnostics, dict) and "error" in diagnostics:
                    findings.extend(_error_findings(str(diagnostics["error"]), root))
                    continue
                if not isinstance(diagnostics, list):
                    continue
                for diag in diagnostics:
                    findings.append(_finding(analyzer, diag, root))
    # Type errors are printed as compiler text, not JSON.
    findings.extend(_error_findings(output, root))
    return _dedupe(findings)


def _objects(text: str) -> list[dict[str, Any]]:
    """Every top-level JSON object in `text` (they span several lines)."""
    decoder = json.JSONDecoder()
    found: list[dict[str, Any]] = []
    index = 0
    while True:
        start = text.find("{", index)
        if start < 0:
            return found
        # Only an object that starts a line is a vet report.
        if start > 0 and text[start - 1] != "\n":
            index = start + 1
            continue
        try:
            obj, end = decoder.raw_decode(text, start)
        except ValueError:
            index = start + 1
            continue
        if isinstance(obj, dict):
            found.append(obj)
        index = end


def _finding(analyzer: str, diag: dict[str, Any], root: str) -> Finding:
    posn = str(diag.get("posn", ""))
    match = _POSN.match(posn)
    file, line, column = (posn, None, None)
    if match:
        file = match.group(1)
        line = int(match.group(2))
        column = int(match.group(3)) if match.group(3) else None
    return Finding(
        file=relative(file, root),
        line=line,
        column=column,
        rule=analyzer,
        message=str(diag.get("message", "")),
        tool="go vet",
    )


def _error_findings(text: str, root: str) -> list[Finding]:
    out = []
    for line in text.splitlines():
        match = _COMPILER.match(line.strip())
        if match:
            out.append(
                Finding(
                    file=relative(match.group(1), root),
                    line=int(match.group(2)),
                    column=int(match.group(3)),
                    rule="typecheck",
                    message=match.group(4).strip(),
                    tool="go vet",
                )
            )
    return out


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen: set[tuple[object, ...]] = set()
    out = []
    for f in findings:
        key = (f.file, f.line, f.column, f.rule, f.message)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out
