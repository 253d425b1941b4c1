"""cargo tarpaulin's JSON report (`--out Json`: tarpaulin-report.json) -> line hits.

Each file's `path` is a list of components (`["/", "w", "src", "lib.rs"]`); each of its
`traces` is a line tarpaulin can tell ran or not, with `stats.Line` the times it ran (the
ptrace engine's line coverage; other stats kinds are not lines and are left out).
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from ..coverage import LineHits
from ..findings import TestFailure
from .paths import relative

#: rustc's text diagnostics, which tarpaulin prints when the tests do not compile (it has no
#: JSON message format): `error[E0308]: mismatched types`, then ` --> tests/broken.rs:4:18`.
_ERROR = re.compile(r"^error(?:\[(E\d+)\])?: (.+)$")
_AT = re.compile(r"^\s*--> (.+?):(\d+):(\d+)$")
_NO_BUILD = "Failed to compile tests!"


def parse(report: str, *, root: str) -> LineHits:
    data: Any = json.loads(report)
    hits: LineHits = {}
    for entry in data.get("files") or []:
        parts = entry.get("path") or []
        name = posixpath.join(*parts) if isinstance(parts, list) and parts else str(parts)
        lines: dict[int, int] = {}
        for trace in entry.get("traces") or []:
            count = (trace.get("stats") or {}).get("Line")
            if isinstance(count, int):
                lines[int(trace["line"])] = max(lines.get(int(trace["line"]), 0), count)
        hits[relative(name, root)] = lines
    return hits


def build_failures(stdout: str, *, root: str) -> list[TestFailure]:
    """The compile errors of a tarpaulin run whose tests did not build, one `build` failure
    each, named as cargo test's are (`tests/broken.rs [build failed]`)."""
    if _NO_BUILD not in stdout:
        return []
    failures: list[TestFailure] = []
    pending: tuple[str, str] | None = None
    for line in stdout.splitlines():
        error = _ERROR.match(line)
        if error:
            pending = (error.group(1) or "", error.group(2).strip())
            continue
        at = _AT.match(line)
        if at and pending is not None:
            file = relative(at.group(1), root)
            failure = TestFailure(
                name=f"{file} [build failed]", package=file, file=file, line=int(at.group(2)),
                message=f"{pending[0]}: {pending[1]}".lstrip(": "), kind="build")
            if failure not in failures:
                failures.append(failure)
            pending = None
    return failures


_LAUNCHED = "Launching test"
_RAN = re.compile(r"^running \d+ tests?$", re.M)


def untraced(stdout: str) -> bool:
    """Whether tarpaulin launched test binaries that never started running: its ptrace engine
    was refused (in a Docker container, the default seccomp profile forbids the
    personality(ADDR_NO_RANDOMIZE) it needs), so no test ran and nothing was measured."""
    return _LAUNCHED in stdout and _RAN.search(stdout) is None
