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
# cargo's stderr, one per test binary in the order they run:
#   `     Running unittests src/lib.rs (target/debug/deps/crate-1a2b)`
#   `     Running tests/integration.rs (target/debug/deps/integration-3c4d)`
#   `   Doc-tests crate`
_RUNNING = re.compile(r"^\s+Running (?:unittests )?(\S+) \((?:.*/)?([^/()]+?)(?:-[0-9a-f]+)?\)$")
_DOCTESTS = re.compile(r"^\s+Doc-tests (\S+)$")
_BINARY_START = re.compile(r"^running \d+ tests?$")


def binaries(stderr: str) -> list[str]:
    """The test binaries cargo ran, in order, each as the target it was built from
    (`src/lib.rs`, `tests/a.rs`, `src/main.rs`, `src/bin/x.rs`, or `doc`)."""
    found: list[str] = []
    for line in stderr.splitlines():
        running = _RUNNING.match(line)
        if running:
            found.append(running.group(1))
        elif _DOCTESTS.match(line):
            found.append("doc")
    return found


def target_flags(target: str) -> list[str]:
    """The cargo test flags that select one test binary again."""
    if target == "doc":
        return ["--doc"]
    if target in ("src/lib.rs",):
        return ["--lib"]
    stem = target.rsplit("/", 1)[-1].removesuffix(".rs")
    if target.startswith("tests/"):
        return ["--test", stem]
    if target.startswith("benches/"):
        return ["--bench", stem]
    if target.startswith("examples/"):
        return ["--example", stem]
    if target.startswith("src/bin/"):
        return ["--bin", stem]
    return ["--bins"]  # src/main.rs: the package's binary


def parse(
    stdout: str, *, root: str, stderr: str = ""
) -> tuple[int, int, int, list[TestFailure]]:
    """Counts and failures; a failure's `package` is its test binary's target (from cargo's
    stderr), so a name found in two binaries stays two failures with their own places."""
    passed = failed = skipped = 0
    order = binaries(stderr)
    binary = -1
    failed_names: list[tuple[int, str]] = []
    sections: dict[tuple[int, str], list[str]] = {}
    current: tuple[int, str] | None = None
    for line in stdout.splitlines():
        if line.startswith('{"reason":'):
            continue
        if _BINARY_START.match(line):
            binary += 1
            current = None
            continue
        result = _RESULT.match(line)
        if result:
            name, status = result.group(1), result.group(2)
            if status == "ok":
                passed += 1
            elif status == "FAILED":
                failed += 1
                failed_names.append((binary, name))
            else:
                skipped += 1
            current = None
            continue
        section = _SECTION.match(line)
        if section:
            current = (binary, section.group(1))
            sections[current] = []
            continue
        if current is not None:
            if line in ("failures:", "successes:") or line.startswith("test result:"):
                current = None
                continue
            sections[current].append(line)

    failures = [
        _failure(name, sections.get((index, name), []),
                 order[index] if 0 <= index < len(order) else "")
        for index, name in failed_names
    ]
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


def _failure(name: str, lines: list[str], target: str) -> TestFailure:
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
        package=target,
        file=file,
        line=line_no,
        message="; ".join(message_lines) or first_line(output),
        output=excerpt(output),
        selector=name,
    )
