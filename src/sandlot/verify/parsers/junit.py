"""JUnit XML into test results: pytest (`--junitxml`, xunit1 family) and node's test runner
(`--test-reporter=junit`)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Literal

from ..findings import TestFailure
from .paths import excerpt, first_line, relative

# The crash location pytest prints at the end of a traceback: `tests/test_x.py:11: AssertionError`.
_PY_CRASH = re.compile(r"^(\S+\.py):(\d+): (\w[\w.]*)?", re.MULTILINE)
# A JavaScript stack frame: `at fn (/abs/file.js:4:30)` or `at /abs/file.js:4:30`.
_JS_FRAME = re.compile(r"\(?((?:file://)?/[^\s():]+):(\d+):(\d+)\)?")


@dataclass
class _Case:
    element: ET.Element
    suites: list[str]


def _cases(xml_text: str) -> list[_Case]:
    root = ET.fromstring(xml_text)
    found: list[_Case] = []

    def walk(node: ET.Element, suites: list[str]) -> None:
        for child in node:
            if child.tag == "testcase":
                found.append(_Case(child, suites))
            elif child.tag == "testsuite":
                name = child.get("name", "")
                walk(child, [*suites, name] if name else suites)

    walk(root, [])
    return found


def _problem(case: ET.Element) -> ET.Element | None:
    for tag in ("failure", "error"):
        found = case.find(tag)
        if found is not None:
            return found
    return None


def parse_pytest(xml_text: str, *, root: str) -> tuple[int, int, int, list[TestFailure]]:
    """pytest's JUnit report. Suites are pytest's own ("pytest"), not test groups."""
    passed = failed = skipped = 0
    failures: list[TestFailure] = []
    for case in _cases(xml_text):
        el = case.element
        problem = _problem(el)
        if el.find("skipped") is not None and problem is None:
            skipped += 1
            continue
        if problem is None:
            passed += 1
            continue
        failed += 1
        failures.append(_pytest_failure(el, problem, root))
    return passed, failed, skipped, failures


def _pytest_failure(el: ET.Element, problem: ET.Element, root: str) -> TestFailure:
    classname = el.get("classname", "")
    name = el.get("name", "")
    file_attr = el.get("file")
    text = problem.text or ""
    message = problem.get("message") or first_line(text)
    # Node id: file::Class::name (classes are the classname parts after the module path).
    module = classname
    classes: list[str] = []
    if file_attr:
        module_path = file_attr[:-3].replace("/", ".") if file_attr.endswith(".py") else ""
        if module_path and classname.startswith(module_path):
            rest = classname[len(module_path) :].strip(".")
            classes = rest.split(".") if rest else []
            module = module_path
    selector = "::".join([file_attr, *classes, name]) if file_attr else ""
    file = line = None
    crashes = _PY_CRASH.findall(text)
    if crashes:
        crash_file, crash_line, _ = crashes[-1]
        file, line = relative(crash_file, root), int(crash_line)
    elif file_attr:
        file = relative(file_attr, root)
        raw_line = el.get("line")
        # pytest's JUnit `line` is 0-based.
        line = int(raw_line) + 1 if raw_line and raw_line.isdigit() else None
    display = "::".join([*classes, name])
    collecting = problem.tag == "error" and "collect" in (problem.get("message") or "")
    kind: Literal["test", "build"] = "build" if collecting else "test"
    return TestFailure(
        name=display,
        package=module,
        file=file,
        line=line,
        message=first_line(message),
        output=excerpt(text),
        selector=selector,
        kind=kind,
    )


def parse_node(xml_text: str, *, root: str) -> tuple[int, int, int, list[TestFailure]]:
    """node's JUnit report: suites are `describe` blocks; the file comes from the stack."""
    passed = failed = skipped = 0
    failures: list[TestFailure] = []
    for case in _cases(xml_text):
        el = case.element
        problem = _problem(el)
        if problem is None:
            if el.find("skipped") is not None:
                skipped += 1
            else:
                passed += 1
            continue
        failed += 1
        text = problem.text or ""
        file, line = js_location(text, root)
        title = el.get("name", "")
        failures.append(
            TestFailure(
                name=" > ".join([*case.suites, title]),
                package=file or "",
                file=file,
                line=line,
                message=node_message(text) or first_line(problem.get("message") or ""),
                output=excerpt(text),
                selector=title,
            )
        )
    return passed, failed, skipped, failures


def js_location(stack: str, root: str, prefer: str | None = None) -> tuple[str | None, int | None]:
    """The first stack frame inside the workspace (not node_modules, not node internals).

    With `prefer` (a workspace-relative file, e.g. the test file), a frame in it wins.
    """
    candidates: list[tuple[str, int]] = []
    for match in _JS_FRAME.finditer(stack):
        path = relative(match.group(1), root)
        if path.startswith("/") or "node_modules/" in path:
            continue
        candidates.append((path, int(match.group(2))))
    if prefer is not None:
        for path, line in candidates:
            if path == prefer:
                return path, line
    if candidates:
        return candidates[0]
    return None, None


_NODE_CAUSE = re.compile(r"^\s*cause: (.*)$")
_ERROR_CODE = re.compile(r" \[ERR_[A-Z_]+\]")


def node_message(text: str, limit: int = 500) -> str:
    """The assertion message of a node:test failure: the `cause:` lines before its stack.

    (The JUnit `message` attribute squashes those lines together without separators.)
    """
    lines = text.splitlines()
    for index, line in enumerate(lines):
        match = _NODE_CAUSE.match(line)
        if not match:
            continue
        parts = [_ERROR_CODE.sub("", match.group(1).strip())]
        for follow in lines[index + 1 :]:
            stripped = follow.strip()
            if stripped.startswith("at ") or stripped.endswith("{") or stripped.startswith("}"):
                break
            if stripped:
                parts.append(stripped)
        return join_message(parts, limit)
    return ""


def join_message(parts: list[str], limit: int = 500) -> str:
    """Lines of an assertion message on one line: 'Expected: 2; Received: 8'."""
    out = ""
    for part in parts:
        if not out:
            out = part
        elif out.endswith(":"):
            out += " " + part
        else:
            out += "; " + part
    return out if len(out) <= limit else out[:limit] + "..."
