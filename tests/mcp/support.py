"""Launching `sandlot mcp` as an agent does: a subprocess, spoken to over stdio or HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parents[2]
INSPECTOR = REPO / ".tools" / "mcp-inspector" / "node_modules" / ".bin" / "mcp-inspector"


def env(**extra: str) -> dict[str, str]:
    out = dict(os.environ)
    out["PYTHONPATH"] = str(REPO / "src")
    out.pop("SANDLOT_PROVIDER", None)
    out.pop("SANDLOT_TOKEN", None)
    out.update(extra)
    return out


def command(*args: str) -> list[str]:
    return [sys.executable, "-m", "sandlot", "mcp", *args]


def stdio_params(*args: str, errlog: Path | None = None) -> StdioServerParameters:
    argv = command(*args)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env())


def start(*args: str, extra_env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(command(*args), env=env(**(extra_env or {})),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(proc: subprocess.Popen[str], pattern: str, timeout: float = 120) -> re.Match[str]:
    """Read the server's stderr until a line matches `pattern`."""
    assert proc.stderr is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            raise AssertionError(f"sandlot mcp ended early: {''.join(seen)}")
        seen.append(line)
        found = re.search(pattern, line)
        if found:
            return found
    raise AssertionError(f"no line matched {pattern!r}: {''.join(seen)}")
