"""What the formatters say about one file, in `--check` mode: gofmt -l, ruff format --check
(JSON), prettier --check, rustfmt --check. Each gives (syntax findings, formatted, lines the
formatter would change); `formatted` is None when the formatter could not parse the file."""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from ..findings import Finding
from .paths import relative

Verdict = tuple[list[Finding], bool | None, list[int]]

#: gofmt's parse errors on stderr: `path:line:col: message`.
_GO_SYNTAX = re.compile(r"^(.+?\.go):(\d+):(\d+): (.*)$")


def gofmt(stdout: str, stderr: str, *, file: str, root: str, cwd: str) -> Verdict:
    """`gofmt -l FILE`: the file's name on stdout when it is not formatted; parse errors on
    stderr (exit 2)."""
    findings = []
    for line in stderr.splitlines():
        match = _GO_SYNTAX.match(line.strip())
        if match:
            findings.append(Finding(
                file=_at(match.group(1), root, cwd), line=int(match.group(2)),
                column=int(match.group(3)), rule="syntax", message=match.group(4).strip(),
                tool="gofmt"))
    if findings:
        return findings, None, []
    listed = {_at(line.strip(), root, cwd) for line in stdout.splitlines() if line.strip()}
    return [], file not in listed, []


def ruff_format(stdout: str, *, file: str, root: str) -> Verdict:
    """`ruff format --check --output-format=json FILE`: `unformatted` diagnostics (with the
    first line that would change) and `invalid-syntax` ones."""
    text = stdout.strip()
    items: list[dict[str, Any]] = json.loads(text) if text else []
    findings: list[Finding] = []
    lines: list[int] = []
    unformatted = False
    for item in items:
        location = item.get("location") or {}
        path = relative(str(item.get("filename", "")), root)
        code = str(item.get("code") or "")
        if code == "unformatted":
            if path == file:
                unformatted = True
                if isinstance(location.get("row"), int):
                    lines.append(location["row"])
            continue
        findings.append(Finding(
            file=path, line=location.get("row"), column=location.get("column"),
            rule="syntax" if code == "invalid-syntax" else code or "syntax",
            message=str(item.get("message", "")), tool="ruff format"))
    if findings:
        return findings, None, []
    return [], not unformatted, sorted(set(lines))


#: prettier --check: `[warn] path` per unformatted file (then a summary line), and
#: `[error] path: SyntaxError: message (line:col)` for a file it cannot parse.
_PRETTIER_WARN = re.compile(r"^\[warn\] (.+)$")
_PRETTIER_ERROR = re.compile(r"^\[error\] (.+?): (\w*Error): (.*?)(?: \((\d+):(\d+)\))?$")


def prettier(stdout: str, stderr: str, *, file: str, root: str, cwd: str) -> Verdict:
    findings = []
    listed: set[str] = set()
    for line in (stdout + "\n" + stderr).splitlines():
        error = _PRETTIER_ERROR.match(line.strip())
        if error:
            findings.append(Finding(
                file=_at(error.group(1), root, cwd),
                line=int(error.group(4)) if error.group(4) else None,
                column=int(error.group(5)) if error.group(5) else None,
                rule="syntax", message=f"{error.group(2)}: {error.group(3)}", tool="prettier"))
            continue
        warn = _PRETTIER_WARN.match(line.strip())
        if warn and not warn.group(1).startswith("Code style issues"):
            listed.add(_at(warn.group(1), root, cwd))
    if findings:
        return findings, None, []
    return [], file not in listed, []


#: rustfmt --check: `Diff in /abs/path.rs:LINE:` before each hunk (older releases: `Diff in
#: /abs/path.rs at line LINE:`); parse errors as rustc diagnostics on stderr.
_RUST_DIFF = re.compile(r"^Diff in (.+?\.rs)(?::| at line )(\d+):$")
_RUST_ERROR = re.compile(r"^error(?:\[\w+\])?: (.*)$")
_RUST_ARROW = re.compile(r"^\s*--> (.+?\.rs):(\d+):(\d+)$")


def rustfmt(stdout: str, stderr: str, *, file: str, root: str, cwd: str) -> Verdict:
    findings = []
    message = ""
    for line in stderr.splitlines():
        error = _RUST_ERROR.match(line)
        if error:
            message = error.group(1).strip()
            continue
        arrow = _RUST_ARROW.match(line)
        if arrow and message:
            findings.append(Finding(
                file=_at(arrow.group(1), root, cwd), line=int(arrow.group(2)),
                column=int(arrow.group(3)), rule="syntax", message=message, tool="rustfmt"))
            message = ""
    if findings:
        return findings, None, []
    lines = []
    for line in stdout.splitlines():
        diff = _RUST_DIFF.match(line.strip())
        # rustfmt also formats the modules a file declares (`mod x;`): only this file counts.
        if diff and _at(diff.group(1), root, cwd) == file:
            lines.append(int(diff.group(2)))
    return [], not lines, sorted(set(lines))


def _at(path: str, root: str, cwd: str) -> str:
    """A path a tool printed (relative to where it ran, or absolute), relative to the root."""
    path = path.strip()
    if not posixpath.isabs(path):
        path = posixpath.join(cwd, path)
    return relative(path, root)
