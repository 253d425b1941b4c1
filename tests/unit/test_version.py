"""`sandlot --version` and `sandlot.__version__` say the installed release (issue 26)."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import sandlot
from sandlot import _version

REPO = Path(__file__).resolve().parents[2]


def _pyproject_version() -> str:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    version: str = data["project"]["version"]
    return version


def test_dunder_version_is_the_installed_release() -> None:
    assert sandlot.__version__ == _pyproject_version()
    assert "__version__" in sandlot.__all__


def test_cli_version_flag_prints_it_and_exits_0() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandlot", "--version"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"sandlot {_pyproject_version()}"


def test_version_without_metadata_falls_back_to_a_valid_local_version() -> None:
    # A source tree that was never installed has no metadata to read.
    assert _version.installed_version("sandlot-not-installed-anywhere") == _version.UNKNOWN
    from packaging.version import Version

    assert Version(_version.UNKNOWN) < Version("0.0.1")
