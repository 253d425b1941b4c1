"""cargo `--message-format=json` compiler messages into findings (clippy, check, test builds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..findings import Finding, Severity
from .paths import relative

_SEVERITY: dict[str, Severity] = {
    "error": "error",
    "error: internal compiler error": "error",
    "warning": "warning",
}


def messages(stdout: str) -> Iterator[dict[str, Any]]:
    """Every cargo JSON message on stdout (other lines -- e.g. libtest's text -- are skipped)."""
    for line in stdout.splitlines():
        if not line.startswith('{"reason":'):
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def parse(stdout: str, *, root: str) -> list[Finding]:
    """Diagnostics with a primary span, deduplicated (a lib and its test target repeat them)."""
    findings: list[Finding] = []
    seen: set[tuple[object, ...]] = set()
    for msg in messages(stdout):
        if msg.get("reason") != "compiler-message":
            continue
        diag = msg.get("message") or {}
        level = str(diag.get("level", ""))
        severity = _SEVERITY.get(level)
        if severity is None:
            continue  # notes and help belong to a parent diagnostic
        span = next((s for s in diag.get("spans", []) if s.get("is_primary")), None)
        if span is None:
            continue  # summaries such as "3 warnings emitted" / "aborting due to ..."
        code = (diag.get("code") or {}).get("code") or ""
        manifest_dir = _package_dir(msg, root)
        finding = Finding(
            file=relative(str(span.get("file_name", "")), root, manifest_dir),
            line=span.get("line_start"),
            column=span.get("column_start"),
            rule=str(code),
            severity=severity,
            message=str(diag.get("message", "")),
            tool="clippy" if str(code).startswith("clippy::") else "rustc",
        )
        key = (finding.file, finding.line, finding.column, finding.rule, finding.message)
        if key not in seen:
            seen.add(key)
            findings.append(finding)
    return findings


def _package_dir(msg: dict[str, Any], root: str) -> str:
    """Span paths are relative to the package's directory (a workspace member's, say)."""
    manifest = str(msg.get("manifest_path", ""))
    if manifest.endswith("/Cargo.toml"):
        directory = manifest[: -len("/Cargo.toml")]
        rel = relative(directory, root)
        return "" if rel == "." else rel
    return ""
