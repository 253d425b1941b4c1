"""`sandlot verify tests DIR` while something writes under DIR (issue 26.4 showed it with
/tmp): the copy into the sandbox refuses with a typed error naming the file, never a stray
"Task exception was never retrieved" traceback, and no tool runs on a partial copy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_a_directory_written_during_the_copy_is_refused_by_name(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    growing = project / "zz_growing.log"
    growing.write_bytes(os.urandom(8 << 20))
    # Another process appends all along (a thread would wait for the GIL, and might miss
    # the moment tar reads the file).
    writer = subprocess.Popen(
        ["sh", "-c", 'while :; do echo another log line; done >> "$1"', "sh", str(growing)])
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    try:
        done = subprocess.run([sys.executable, "-m", "sandlot", "verify", "tests", str(project)],
                              capture_output=True, text=True, env=env, timeout=300, check=False)
    finally:
        writer.kill()
        writer.wait()
    assert done.returncode == 2, done.stderr  # verify: 1 is "tests failed", 2 its own errors
    assert "Task exception was never retrieved" not in done.stderr
    assert "Traceback" not in done.stderr
    assert f"{growing}: file changed as we read it; nothing was copied" in done.stderr
