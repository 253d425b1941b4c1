"""mocha's `json` reporter (written with `--reporter-option output=FILE`) into test results."""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from ..findings import TestFailure
from .jestjson import assertion_message
from .junit import js_location
from .paths import excerpt, relative

#: A stack frame with a path relative to the working directory (mocha shortens them).
_RELATIVE_FRAME = re.compile(r"\((?![/\w]+:[^\d])(?!/)([^\s():]+):(\d+):(\d+)\)")


#: Where mocha's pretty-printed JSON starts: its opening brace alone on a line.
_JSON_START = re.compile(r"^\{$", re.M)


def parse(report: str, *, root: str) -> tuple[int, int, int, list[TestFailure]]:
    """The report file, or (mocha before 10) its stdout: the tests' own console output, then
    the JSON, then whatever a wrapper printed after it (nyc's coverage summary)."""
    start = _JSON_START.search(report)
    data: dict[str, Any] = json.JSONDecoder().raw_decode(report, start.start() if start else 0)[0]
    stats = data.get("stats") or {}
    failures = [_failure(item, root) for item in data.get("failures") or []]
    # stats.failures also counts failed hooks, which are in `failures` but not in `tests`.
    return int(stats.get("passes", 0)), len(failures), int(stats.get("pending", 0)), failures


def _failure(item: dict[str, Any], root: str) -> TestFailure:
    err = item.get("err") or {}
    stack = str(err.get("stack") or err.get("message") or "")
    # Frames as absolute paths, so the location is found like every other runner's.
    located = _RELATIVE_FRAME.sub(
        lambda m: f"({posixpath.join(root, m.group(1))}:{m.group(2)}:{m.group(3)})", stack
    )
    file = relative(str(item.get("file") or ""), root) if item.get("file") else ""
    loc_file, loc_line = js_location(located, root, prefer=file or None)
    full = str(item.get("fullTitle") or item.get("title") or "")
    hook = str(item.get("title", "")).startswith('"')  # `"before all" hook for "x"`
    return TestFailure(
        name=full,
        package=file,
        file=loc_file or file or None,
        line=loc_line,
        message=assertion_message(stack) or str(err.get("message") or ""),
        output=excerpt(stack),
        # A failed hook has no test of that name to select: its file runs again instead.
        selector="" if hook else full,
    )
