"""`tsc --pretty false` diagnostics into findings.

tsc has no machine-readable output format, so this is the one parser over text:
`src/a.ts(23,7): error TS2322: message` (continuation lines, indented, belong to the message).
"""

from __future__ import annotations

import re

from ..findings import Finding, Severity
from .paths import relative

_DIAG = re.compile(r"^(.+?)\((\d+),(\d+)\): (error|warning|message) (TS\d+): (.*)$")
_GLOBAL = re.compile(r"^(error|warning) (TS\d+): (.*)$")


def parse(stdout: str, *, root: str) -> tuple[list[Finding], list[str]]:
    """(findings, global errors): a global error (bad tsconfig, no inputs) has no file."""
    findings: list[Finding] = []
    global_errors: list[str] = []
    for raw in stdout.splitlines():
        match = _DIAG.match(raw)
        if match:
            severity: Severity = "error" if match.group(4) == "error" else "warning"
            findings.append(
                Finding(
                    file=relative(match.group(1), root),
                    line=int(match.group(2)),
                    column=int(match.group(3)),
                    rule=match.group(5),
                    severity=severity,
                    message=match.group(6).strip(),
                    tool="tsc",
                )
            )
            continue
        glob = _GLOBAL.match(raw)
        if glob:
            global_errors.append(f"{glob.group(2)}: {glob.group(3).strip()}")
            continue
        if raw.startswith(" ") and findings:
            # Continuation of the previous diagnostic's message chain.
            last = findings[-1]
            findings[-1] = last.model_copy(update={"message": f"{last.message}\n{raw.strip()}"})
    return findings, global_errors
