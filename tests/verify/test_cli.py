"""`sandlot verify` as a user runs it: a subprocess, the local provider, the real tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import require
from tests.verify.support import FIXTURES, TOOLS, missing_tools, path_without, tool_env


def sandlot(*args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    absent = missing_tools()
    require(not absent, f"verify tools missing: {', '.join(absent)}")
    env = {**os.environ, **tool_env(), **({"PATH": path} if path is not None else {})}
    env.pop("SANDLOT_PROVIDER", None)
    return subprocess.run(
        [sys.executable, "-m", "sandlot", "verify", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_failing_tests_print_a_table_and_exit_1() -> None:
    done = sandlot("tests", str(FIXTURES / "go"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("go test -json -count=1 ./...  (go, go-test; exit 1, ")
    rows = [line.split() for line in lines if line.startswith("FAIL")]
    assert [row[:3] for row in rows] == [
        ["FAIL", "calc/calc_test.go:13", "TestSub"],
        ["FAIL", "calc/calc_test.go:25", "TestTable/negative"],
    ]
    assert lines[-1] == "3 passed, 2 failed, 1 skipped"


def test_findings_as_json() -> None:
    done = sandlot("lint", str(FIXTURES / "python"), "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is False and report["tool"] == "ruff"
    assert [(f["file"], f["line"], f["rule"]) for f in report["findings"]] == [
        ("src/pyfix/calc.py", 2, "F401"),
        ("src/pyfix/calc.py", 18, "E711"),
    ]


def test_clean_code_exits_0_and_errors_exit_2() -> None:
    clean = sandlot("typecheck", str(FIXTURES / "polyglot"), "--language", "go")
    assert clean.returncode == 0, clean.stderr
    assert clean.stdout.splitlines()[-1] == "0 findings (0 errors, 0 warnings)"
    ambiguous = sandlot("tests", str(FIXTURES / "polyglot"))
    assert ambiguous.returncode == 2
    assert ambiguous.stderr.strip() == (
        "sandlot verify: error: polyglot workspace: 2 project types detected (go, node) — "
        "pass `language` to pick one"
    )


@pytest.mark.parametrize("path", ["does/not/exist"])
def test_bad_path_exits_2(path: str) -> None:
    done = sandlot("lint", path)
    assert done.returncode == 2
    assert "is not a directory" in done.stderr


def test_a_missing_tool_says_which_path_and_env_sets_it() -> None:
    # issue 26 item 6: the error names the sandbox's PATH and the flag that changes it, and
    # the flag works.
    path = path_without("ruff")
    missing = sandlot("lint", str(FIXTURES / "python"), path=path)
    assert missing.returncode == 2
    assert "ruff is not installed: not found on the sandbox's PATH (" in missing.stderr
    assert f".venv/bin:{path}); " in missing.stderr
    assert "--env PATH=... on the command line" in missing.stderr
    found = sandlot("lint", str(FIXTURES / "python"), "--env", f"PATH={TOOLS / 'bin'}:{path}",
                    path=path)
    assert found.returncode == 1, found.stderr  # ruff ran and found the fixture's findings
    assert found.stdout.splitlines()[-1].startswith("2 findings")
    bad = sandlot("lint", str(FIXTURES / "python"), "--env", "PATH")
    assert bad.returncode == 2 and "--env needs KEY=VALUE, got 'PATH'" in bad.stderr


def test_coverage_prints_a_table_per_file() -> None:
    done = sandlot("tests", str(FIXTURES / "python"), "--coverage")
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("python3 -m coverage run -m pytest ")
    table = lines[lines.index("") + 1 :]
    assert [row.split() for row in table] == [
        ["FILE", "LINES", "COVERED", "PERCENT", "UNCOVERED"],
        ["src/pyfix/__init__.py", "0", "0", "100.0%"],
        ["src/pyfix/calc.py", "9", "7", "77.8%", "14,", "18"],
        ["tests/test_calc.py", "17", "16", "94.1%", "29"],
        ["TOTAL", "26", "23", "88.5%", "(coverage.py)"],
    ]
    wrong = sandlot("lint", str(FIXTURES / "python"), "--coverage")
    assert wrong.returncode == 2
    assert wrong.stderr.strip() == "sandlot verify: --coverage is for tests, not lint"
