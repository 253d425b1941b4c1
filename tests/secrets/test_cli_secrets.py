"""The CLI's secret flags as a user runs them (real subprocesses): the value comes from the
host environment or a file, the command gets it, and nothing the CLI prints or writes shows it;
a missing variable is refused before any sandbox exists, naming it and never a value."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VALUE = 'cli-sec_7f3a9c1e5b2d+/"v'
LEAKS = 'printf "%s\\n" "$TOK"; printf "%s" "$TOK" | base64; printf "%s\\n" "$TOK" >&2'


def sandlot(*args: str, extra: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), **(extra or {})}
    env.pop("SANDLOT_PROVIDER", None)
    return subprocess.run([sys.executable, "-m", "sandlot", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_exec_secret_from_the_environment_and_a_file(tmp_path: Path) -> None:
    done = sandlot("exec", "--secret", "TOK", "--", LEAKS, extra={"HOST_TOK": "x", "TOK": VALUE})
    assert done.returncode == 0, done.stderr
    assert VALUE not in done.stdout + done.stderr
    assert done.stdout.count("[secret:TOK]") == 2 and "[secret:TOK]" in done.stderr
    path = tmp_path / "token"
    path.write_text(VALUE + "\n")
    for flag, spec, extra in [("--secret-env", "TOK=HOST_TOK", {"HOST_TOK": VALUE}),
                              ("--secret", f"TOK=@{path}", {})]:
        done = sandlot("exec", flag, spec, "--", 'test "$TOK" = \'' + VALUE.replace("'", "") +
                       "' && " + LEAKS, extra=extra)
        assert done.returncode == 0, done.stderr
        assert VALUE not in done.stdout + done.stderr and "[secret:TOK]" in done.stdout


def test_a_missing_variable_is_refused_before_a_sandbox() -> None:
    done = sandlot("exec", "--secret-env", "TOK=NOT_SET_ANYWHERE", "--", "true")
    assert done.returncode != 0
    assert "NOT_SET_ANYWHERE is not set" in done.stderr
    assert "creating" not in done.stderr


def test_fanout_report_and_table_never_show_it(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    done = sandlot("fanout", "-n", "2", "--secret", "TOK", "--report", str(report), "--",
                   LEAKS + "; exit 3", extra={"TOK": VALUE})
    assert done.returncode != 0
    written = report.read_text()
    for text in (done.stdout, done.stderr, written):
        assert VALUE not in text
    assert "[secret:TOK]" in written and "[secret:TOK]" in done.stdout + done.stderr
    assert json.loads(written)["sandboxes"][0]["command"]["exit_code"] == 3
