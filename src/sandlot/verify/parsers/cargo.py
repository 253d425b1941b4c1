"""cargo `--message-format=json` compiler messages into findings (clippy, check, test builds)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from ..findings import Finding, Severity, SkippedTarget
from .paths import relative

#: rustc's "`#![feature]` may not be used on the stable release channel".
_NIGHTLY_ONLY = "E0554"
#: Targets that are the package itself: when one needs nightly, that is the project's error.
_PACKAGE_KINDS = {"lib", "rlib", "dylib", "cdylib", "staticlib", "proc-macro", "bin"}

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


def _target(msg: dict[str, Any]) -> str:
    target = msg.get("target") or {}
    kinds = target.get("kind") or ["?"]
    return f"{kinds[0]} {target.get('name', '?')}"


def targets(stdout: str) -> tuple[list[str], list[SkippedTarget]]:
    """(checked, skipped): every target cargo compiled, and the benches, tests and examples
    left out because they need a nightly compiler (`#![feature]`, E0554) on a stable one."""
    seen: dict[str, None] = {}
    nightly: dict[str, None] = {}
    for msg in messages(stdout):
        if msg.get("reason") not in ("compiler-message", "compiler-artifact"):
            continue
        name = _target(msg)
        seen[name] = None
        code = ((msg.get("message") or {}).get("code") or {}).get("code")
        if code == _NIGHTLY_ONLY and name.split(" ", 1)[0] not in _PACKAGE_KINDS:
            nightly[name] = None
    skipped = [
        SkippedTarget(target=name, reason="needs a nightly compiler (`#![feature]` is not "
                      "allowed on the stable channel this toolchain is)")
        for name in nightly
    ]
    return [name for name in seen if name not in nightly], skipped


def parse(stdout: str, *, root: str) -> list[Finding]:
    """Diagnostics with a primary span, deduplicated (a lib and its test target repeat them).
    A target skipped by `targets` (it needs nightly) contributes nothing."""
    findings: list[Finding] = []
    seen: set[tuple[object, ...]] = set()
    skipped = {t.target for t in targets(stdout)[1]}
    for msg in messages(stdout):
        if msg.get("reason") != "compiler-message" or _target(msg) in skipped:
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
