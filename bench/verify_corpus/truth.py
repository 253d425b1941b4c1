"""Ground truth: each tool run directly, its machine-readable output read here.

Nothing of sandlot.verify is used: the commands are spelled out, and each reader takes what
the tool itself says (a failing test's name and file, a finding's file, line and rule). Keys
are tuples in the shape score.py builds from sandlot's reports:

- tests: Go (package, test), Rust (test name), pytest (node id), Node (file, full name);
- findings: (file, line, rule).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

Key = tuple[str | int | None, ...]
Keys = Counter[Key]


def _run(argv: list[str], cwd: Path, env: dict[str, str], stdout_only: bool = False) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False,
                          timeout=900)
    return done.stdout if stdout_only else done.stdout + done.stderr


def _rel(path: str, root: Path) -> str:
    if path.startswith("file://"):
        path = path[len("file://"):]
    candidate = Path(path)
    if candidate.is_absolute():
        try:
            return str(candidate.resolve().relative_to(root.resolve()))
        except ValueError:
            return path
    return os.path.normpath(path)


# ---- Go ----------------------------------------------------------------------------------


def go_tests(root: Path, env: dict[str, str]) -> Keys:
    failed: set[tuple[str, str]] = set()
    failed_packages: set[str] = set()
    for line in _run(["go", "test", "-json", "./..."], root, env, stdout_only=True).splitlines():
        if not line.startswith("{"):
            continue
        event = json.loads(line)
        if event.get("Action") == "fail" and event.get("Test"):
            failed.add((event["Package"], event["Test"]))
        elif event.get("Action") == "fail" and event.get("Package"):
            failed_packages.add(event["Package"])
    # A parent fails with its failing subtests: only the leaves are failures of their own.
    leaves = {(p, t) for p, t in failed
              if not any(q == p and u.startswith(t + "/") for q, u in failed)}
    # A package that failed without a failing test did not build (go test's vet included).
    broken = {(p, f"{p} [build failed]") for p in failed_packages
              if not any(q == p for q, _ in failed)}
    return Counter(leaves | broken)


def golangci(root: Path, env: dict[str, str]) -> Keys:
    out = _run(["golangci-lint", "run", "--output.json.path=stdout", "--output.text.path=",
                "--show-stats=false", "--max-issues-per-linter=0", "--max-same-issues=0",
                "--uniq-by-line=false", "--allow-serial-runners", "./..."], root, env,
               stdout_only=True)
    issues = json.loads(out.strip().splitlines()[-1] if out.strip() else "{}").get("Issues")
    return Counter((_rel(i["Pos"]["Filename"], root), i["Pos"]["Line"], i["FromLinter"])
                   for i in issues or [])


def go_vet(root: Path, env: dict[str, str]) -> Keys:
    out = _run(["go", "vet", "-json", "./..."], root, env)
    keys: Keys = Counter()
    # One JSON object per package (after a `# pkg` comment line): {pkg: {analyzer: [diag]}}.
    decoder = json.JSONDecoder()
    text = re.sub(r"(?m)^#.*$", "", out)
    i = 0
    while i < len(text):
        if text[i] != "{":
            i += 1
            continue
        obj, i = decoder.raw_decode(text, i)
        for analyzers in obj.values():
            for analyzer, diagnostics in analyzers.items():
                for diag in diagnostics if isinstance(diagnostics, list) else []:
                    file, line, _ = diag["posn"].rsplit(":", 2)
                    keys[(_rel(file, root), int(line), analyzer)] += 1
    return keys


# ---- Rust --------------------------------------------------------------------------------


def rust_tests(root: Path, env: dict[str, str]) -> Keys:
    # libtest's own JSON events; on a stable toolchain RUSTC_BOOTSTRAP unlocks the flag.
    out = _run(["cargo", "test", "--no-fail-fast", "--", "-Z", "unstable-options",
                "--format", "json"], root, {**env, "RUSTC_BOOTSTRAP": "1"}, stdout_only=True)
    keys: Keys = Counter()
    for line in out.splitlines():
        if line.startswith("{"):
            event = json.loads(line)
            if event.get("type") == "test" and event.get("event") == "failed":
                keys[(event["name"],)] += 1
    return keys


def cargo_findings(root: Path, env: dict[str, str], command: str) -> Keys:
    out = _run(["cargo", command, "--all-targets", "--keep-going", "--message-format=json"],
               root, env, stdout_only=True)
    messages = [json.loads(line) for line in out.splitlines() if line.startswith('{"reason"')]
    # A target that needs nightly (#![feature] on stable) cannot be checked here at all.
    nightly = {m["target"]["name"] for m in messages
               if m.get("reason") == "compiler-message"
               and (m["message"].get("code") or {}).get("code") == "E0554"}
    seen: set[tuple[object, ...]] = set()
    keys: Keys = Counter()
    for m in messages:
        if m.get("reason") != "compiler-message" or m["target"]["name"] in nightly:
            continue
        diag = m["message"]
        if diag["level"] not in ("warning", "error"):
            continue
        span = next((s for s in diag["spans"] if s["is_primary"]), None)
        if span is None:
            continue
        code = (diag.get("code") or {}).get("code") or ""
        unique = (span["file_name"], span["line_start"], span["column_start"], code,
                  diag["message"])
        if unique not in seen:  # a lib and its test build repeat each diagnostic
            seen.add(unique)
            keys[(_rel(span["file_name"], root), span["line_start"], code)] += 1
    return keys


# ---- Python ------------------------------------------------------------------------------


def pytest_tests(root: Path, env: dict[str, str]) -> Keys:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        _run(["python3", "-m", "pytest", "-o", "junit_family=xunit1", f"--junitxml={report}",
              "-p", "no:cacheprovider", "-q"], root, env)
        tree = ET.parse(report)
    keys: Keys = Counter()
    for case in tree.iter("testcase"):
        if case.find("failure") is None and case.find("error") is None:
            continue
        file = case.get("file", "")
        module = file[:-3].replace("/", ".")
        classname = case.get("classname", "")
        rest = classname[len(module):].strip(".") if classname.startswith(module) else ""
        keys[("::".join([file, *(rest.split(".") if rest else []), case.get("name", "")]),)] += 1
    return keys


def ruff(root: Path, env: dict[str, str]) -> Keys:
    out = _run(["ruff", "check", "--output-format=json", "--no-cache", "--exit-zero", "."],
               root, env, stdout_only=True)
    return Counter((_rel(f["filename"], root), f["location"]["row"], f["code"] or "")
                   for f in json.loads(out))


def mypy(root: Path, env: dict[str, str]) -> Keys:
    out = _run(["mypy", "-O", "json", "--no-error-summary", "."], root, env, stdout_only=True)
    keys: Keys = Counter()
    for line in out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if d.get("severity") in ("error", "warning"):
                keys[(_rel(d["file"], root), d["line"], d.get("code") or "")] += 1
    return keys


# ---- Node --------------------------------------------------------------------------------


def mocha_tests(root: Path, env: dict[str, str], spec: list[str]) -> Keys:
    # The json reporter on stdout (every mocha version); it starts with "{" alone on a line.
    out = _run(["mocha", *spec, "--reporter", "json"], root, env, stdout_only=True)
    start = 0 if out.startswith("{") else out.index("\n{\n") + 1
    data = json.JSONDecoder().raw_decode(out, start)[0]
    return Counter((_rel(f["file"], root), f["fullTitle"]) for f in data["failures"])


def jest_like_tests(root: Path, env: dict[str, str], argv: list[str], flag: str) -> Keys:
    """jest --json and vitest's json reporter share a shape."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        _run([*argv, f"{flag}{report}"], root, env)
        data = json.loads(report.read_text())
    keys: Keys = Counter()
    for suite in data["testResults"]:
        for test in suite["assertionResults"]:
            if test["status"] == "failed":
                # vitest 1.x puts the file's empty title first: a title of nothing names nothing.
                titles = [t for t in test.get("ancestorTitles", []) if t]
                name = " > ".join([*titles, test["title"]])
                keys[(_rel(suite["name"], root), name)] += 1
    return keys


def node_test_tests(root: Path, env: dict[str, str], files: list[str]) -> Keys:
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "node.xml"
        _run(["node", "--test", "--test-reporter=junit", f"--test-reporter-destination={report}",
              *files], root, env)
        tree = ET.parse(report)
    keys: Keys = Counter()

    def walk(element: ET.Element, suites: list[str], file: str) -> None:
        for child in element:
            where = child.get("file") or file  # a suite's cases may leave the file to it
            if child.tag == "testsuite":
                walk(child, [*suites, child.get("name", "")], where)
            elif child.tag == "testcase" and child.find("failure") is not None:
                keys[(_rel(where, root), " > ".join([*suites, child.get("name", "")]))] += 1

    # Node 20's JUnit names no file: with one file run, every case is from that file.
    walk(tree.getroot(), [], files[0] if len(files) == 1 else "")
    return keys


def eslint(root: Path, env: dict[str, str]) -> Keys:
    out = _run(["eslint", ".", "--format", "json"], root, env, stdout_only=True)
    return Counter((_rel(r["filePath"], root), m.get("line"), m.get("ruleId") or "")
                   for r in json.loads(out) for m in r["messages"])


_TSC = re.compile(r"^(.+?)\((\d+),(\d+)\): (?:error|warning) (TS\d+):", re.M)


def tsc(root: Path, env: dict[str, str]) -> Keys:
    out = _run(["tsc", "--noEmit", "--pretty", "false"], root, env, stdout_only=True)
    return Counter((_rel(m.group(1), root), int(m.group(2)), m.group(4))
                   for m in _TSC.finditer(out))
