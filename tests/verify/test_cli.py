"""`sandlot verify` as a user runs it: a subprocess, the local provider, the real tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import require
from tests.verify.support import FIXTURES, missing_tools, tool_env


def sandlot(*args: str) -> subprocess.CompletedProcess[str]:
    absent = missing_tools()
    require(not absent, f"verify tools missing: {', '.join(absent)}")
    env = {**os.environ, **tool_env()}
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
