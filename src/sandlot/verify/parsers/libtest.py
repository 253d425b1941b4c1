"""`cargo test` output: libtest's text (its JSON format is unstable) plus cargo's JSON build
messages on the same stdout (a compile error becomes a `build` failure)."""

from __future__ import annotations

import re

from ..findings import TestFailure
from . import cargo
from .paths import excerpt, first_line

_RESULT = re.compile(r"^test (.+?) \.\.\. (ok|FAILED|ignored(?:, .*)?)$")
_SECTION = re.compile(r"^---- (.+?) stdout ----$")
# `thread 'tests::sub_works' (19095) panicked at src/lib.rs:27:9:` (the id is newer Rust).
_PANIC = re.compile(r"^thread '(.*?)'(?: \(\d+\))? panicked at (.+?):(\d+):(\d+):?\s*(.*)$")


def parse(stdout: str, *, root: str) -> tuple[int, int, int, list[TestFailure]]:
    passed = failed = skipped = 0
    failed_names: list[str] = []
    sections: dict[str, list[str]] = {}
    current: str | None = None
    for line in stdout.splitlines():
        if line.startswith('{"reason":'):
            continue
        result = _RESULT.match(line)
        if result:
            name, status = result.group(1), result.group(2)
            if status == "ok":
                passed += 1
            elif status == "FAILED":
                failed += 1
                failed_names.append(name)
            else:
                skipped += 1
            current = None
            continue
        section = _SECTION.match(line)
        if section:
            current = section.group(1)
            sections[current] = []
            continue
        if current is not None:
            if line in ("failures:", "successes:") or line.startswith("test result:"):
                current = None
                continue
            sections[current].append(line)

    failures = [_failure(name, sections.get(name, [])) for name in failed_names]
    for finding in cargo.parse(stdout, root=root):
        if finding.severity == "error":
            failures.append(
                TestFailure(
                    name=f"{finding.file} [build failed]",
                    package=finding.file,
                    file=finding.file,
                    line=finding.line,
                    message=f"{finding.rule}: {finding.message}".lstrip(": "),
                    kind="build",
                )
            )
    return passed, failed, skipped, failures


def _failure(name: str, lines: list[str]) -> TestFailure:
    file = line_no = None
    message_lines: list[str] = []
    for index, text in enumerate(lines):
        panic = _PANIC.match(text)
        if panic:
            file, line_no = panic.group(2), int(panic.group(3))
            if panic.group(5):
                message_lines.append(panic.group(5))
            for follow in lines[index + 1 :]:
                if not follow.strip() or follow.startswith(("note:", "stack backtrace:")):
                    break
                message_lines.append(follow.strip())
            break
    output = "\n".join(lines).strip("\n")
    return TestFailure(
        name=name,
        package="",
        file=file,
        line=line_no,
        message="; ".join(message_lines) or first_line(output),
        output=excerpt(output),
        selector=name,
    )
