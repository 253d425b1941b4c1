"""Every example path a command's --help names exists in the repository."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("command", ["exec", "serve", "gc"])
def test_help_examples_point_at_real_paths(command: str) -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "sandlot", command, "--help"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    for path in re.findall(r"\bexamples/[\w./-]+", shown):
        assert (REPO / path).exists(), f"`sandlot {command} --help` names missing {path}"
