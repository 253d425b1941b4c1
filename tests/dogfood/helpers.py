"""Run `python -m dogfood` for real, as a user would, and read what it reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class DogfoodRun:
    code: int
    stdout: str
    stderr: str
    report: dict[str, Any]

    def scenario(self, backend: str, name: str) -> dict[str, Any]:
        for item in self.report["scenarios"]:
            if item["backend"] == backend and item["scenario"] == name:
                return dict(item)
        raise AssertionError(f"no {backend}/{name} in the report: {self.names(backend)}")

    def names(self, backend: str) -> list[str]:
        return [s["scenario"] for s in self.report["scenarios"] if s["backend"] == backend]

    def backend(self, name: str) -> dict[str, Any]:
        return dict(next(b for b in self.report["backends"] if b["name"] == name))


def run_dogfood(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 900
) -> DogfoodRun:
    """Run the real command from the repository root; the report goes to `tmp_path`."""
    report = tmp_path / "report.json"
    done = subprocess.run(
        [sys.executable, "-m", "dogfood", "--report", str(report), *args],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )
    assert report.exists(), f"no report written (exit {done.returncode}):\n{done.stderr}"
    return DogfoodRun(done.returncode, done.stdout, done.stderr, json.loads(report.read_text()))
