"""jest `--json` and vitest `--reporter=json` (the same shape) into test results."""

from __future__ import annotations

import json
from typing import Any

from ..findings import TestFailure
from .junit import join_message, js_location
from .paths import excerpt, first_line, relative

_SKIPPED = {"pending", "skipped", "todo", "disabled"}


def parse(report: str, *, root: str) -> tuple[int, int, int, list[TestFailure]]:
    data: dict[str, Any] = json.loads(report)
    passed = failed = skipped = 0
    failures: list[TestFailure] = []
    for suite in data.get("testResults", []):
        file = relative(str(suite.get("name", "")), root)
        assertions = suite.get("assertionResults", [])
        for test in assertions:
            status = test.get("status")
            if status == "passed":
                passed += 1
            elif status in _SKIPPED:
                skipped += 1
            elif status == "failed":
                failed += 1
                failures.append(_failure(test, file, root))
        if suite.get("status") == "failed" and not any(
            t.get("status") == "failed" for t in assertions
        ):
            # The file itself failed (syntax error, import error): no test in it ran.
            text = str(suite.get("message") or "")
            loc_file, loc_line = js_location(text, root, prefer=file)
            failures.append(
                TestFailure(
                    name=file,
                    package=file,
                    file=loc_file or file,
                    line=loc_line,
                    message=first_line(text) or "test file failed to run",
                    output=excerpt(text),
                    selector="",
                    kind="build",
                )
            )
    return passed, failed, skipped, failures


def _failure(test: dict[str, Any], file: str, root: str) -> TestFailure:
    text = "\n".join(str(m) for m in test.get("failureMessages") or [])
    loc_file, loc_line = js_location(text, root, prefer=file)
    location = test.get("location")
    if loc_file is None and isinstance(location, dict):
        loc_file, loc_line = file, location.get("line")
    # vitest 1.x puts the file's empty title first (`' > Suite > test'`): drop empty titles.
    titles = [*(t for t in test.get("ancestorTitles", []) if t), test.get("title", "")]
    return TestFailure(
        name=" > ".join(str(t) for t in titles),
        package=file,
        file=loc_file or file,
        line=loc_line,
        message=assertion_message(text),
        output=excerpt(text),
        selector=str(test.get("fullName") or " ".join(str(t) for t in titles)),
    )


def assertion_message(text: str, limit: int = 500) -> str:
    """The lines before the stack trace (jest puts Expected / Received there), joined."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.lstrip().startswith("at "):
            break
        if line.strip():
            lines.append(line.strip())
    return join_message(lines, limit) or first_line(text)
