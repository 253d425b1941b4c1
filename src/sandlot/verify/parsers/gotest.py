"""`go test -json` (test2json events) into test results."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from ..findings import TestFailure
from .paths import excerpt, relative

# `    calc_test.go:13: Sub(5, 3) = 8, want 2` (t.Error/t.Fatal location, relative to the package).
_LOCATION = re.compile(r"^\s+([\w./-]+\.go):(\d+): ?(.*)$")
# Compiler / vet output in build failures: `calc/calc.go:21:27: message` or `./x.go:3:2: msg`.
_BUILD_LOCATION = re.compile(r"^(\.{0,2}/?[\w./-]+\.go):(\d+)(?::(\d+))?: (.*)$")
# A frame of a panic's stack trace: `\t/abs/path/calc_test.go:13 +0x1d`.
_FRAME = re.compile(r"^\s+(/\S+\.go):(\d+)(?: \+0x[0-9a-f]+)?$")
_NOISE = re.compile(r"^(=== (RUN|PAUSE|CONT|NAME)|--- (FAIL|PASS|SKIP):)")


@dataclass
class _Test:
    package: str
    name: str
    action: str = ""
    output: list[str] = field(default_factory=list)


def package_dir(import_path: str, module: str) -> str:
    """The directory of a package relative to the module root ('' for the root package)."""
    if module and import_path == module:
        return ""
    if module and import_path.startswith(module + "/"):
        return import_path[len(module) + 1 :]
    return ""


def parse(
    stdout: str, *, root: str, module: str = ""
) -> tuple[int, int, int, list[TestFailure]]:
    """(passed, failed, skipped, failures) from test2json events.

    Only leaf tests are counted: a parent fails because a subtest failed, and reporting both
    would double-count one problem. Build failures become `kind="build"` failures, one per
    package, located at the first compiler error.
    """
    tests: dict[tuple[str, str], _Test] = {}
    order: list[tuple[str, str]] = []
    build_output: dict[str, list[str]] = {}
    failed_builds: list[str] = []
    package_output: dict[str, list[str]] = {}
    package_failed: list[str] = []
    for line in stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        action = event.get("Action", "")
        if action == "build-output":
            build_output.setdefault(_strip_variant(event.get("ImportPath", "")), []).append(
                event.get("Output", "")
            )
            continue
        if action == "build-fail":
            continue
        pkg = event.get("Package", "")
        name = event.get("Test")
        if name is None:
            if action == "output":
                package_output.setdefault(pkg, []).append(event.get("Output", ""))
            elif action == "fail":
                if event.get("FailedBuild"):
                    failed_builds.append(pkg)
                else:
                    package_failed.append(pkg)
            continue
        key = (pkg, name)
        test = tests.get(key)
        if test is None:
            test = tests[key] = _Test(pkg, name)
            order.append(key)
        if action == "output":
            test.output.append(event.get("Output", ""))
        elif action in ("pass", "fail", "skip"):
            test.action = action

    parents = {(pkg, name.rsplit("/", 1)[0]) for pkg, name in tests if "/" in name}
    passed = failed = skipped = 0
    failures: list[TestFailure] = []
    for key in order:
        test = tests[key]
        if key in parents:
            continue
        if test.action == "pass":
            passed += 1
        elif test.action == "skip":
            skipped += 1
        elif test.action == "fail":
            failed += 1
            failures.append(_failure(test, root=root, module=module))
    for pkg in failed_builds:
        failures.append(_build_failure(pkg, build_output.get(pkg, []), root=root, module=module))
    # A package that failed with no failing test (TestMain exit, panic in init, timeout).
    failing_pkgs = {f.package for f in failures}
    for pkg in package_failed:
        if pkg not in failing_pkgs:
            text = "".join(package_output.get(pkg, []))
            failures.append(
                TestFailure(
                    name=pkg,
                    package=pkg,
                    message=_first_meaningful(text) or "package failed",
                    output=excerpt(text),
                    selector="",
                )
            )
    return passed, failed, skipped, failures


def _strip_variant(import_path: str) -> str:
    # "example.com/m/calc [example.com/m/calc.test]" -> "example.com/m/calc"
    return import_path.split(" [", 1)[0]


def _first_meaningful(text: str) -> str:
    for line in text.splitlines():
        if line.strip() and not _NOISE.match(line) and not line.startswith(("FAIL", "ok ")):
            return line.strip()
    return ""


def _failure(test: _Test, *, root: str, module: str) -> TestFailure:
    lines = [ln for ln in "".join(test.output).splitlines() if not _NOISE.match(ln)]
    file = line_no = None
    message = ""
    for ln in lines:
        match = _LOCATION.match(ln)
        if match:
            file = relative(match.group(1), root, package_dir(test.package, module))
            line_no = int(match.group(2))
            message = match.group(3).strip()
            break
    if not message:
        message = next((ln.strip() for ln in lines if ln.strip()), "")
    if file is None:
        # A panic: the first stack frame inside the workspace is where it happened.
        for ln in lines:
            frame = _FRAME.match(ln)
            if frame and not relative(frame.group(1), root).startswith("/"):
                file, line_no = relative(frame.group(1), root), int(frame.group(2))
                break
    return TestFailure(
        name=test.name,
        package=test.package,
        file=file,
        line=line_no,
        message=message,
        output=excerpt("\n".join(lines)),
        selector=test.name,
    )


def _build_failure(pkg: str, output: list[str], *, root: str, module: str) -> TestFailure:
    text = "".join(output)
    file = line_no = None
    message = ""
    for ln in text.splitlines():
        match = _BUILD_LOCATION.match(ln)
        if match:
            # Build output paths are relative to the directory go ran in (the root).
            file = relative(match.group(1), root)
            line_no = int(match.group(2))
            message = match.group(4).strip()
            break
    return TestFailure(
        name=f"{pkg} [build failed]",
        package=pkg,
        file=file,
        line=line_no,
        message=message or "build failed",
        output=excerpt(text),
        kind="build",
    )
