"""Telemetry off costs nothing: without opentelemetry installed, or with it installed and no
provider configured, sandlot runs the same and records nothing (fresh interpreters: the
providers of the other telemetry tests are process-global)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
{block}
import anyio, sandlot
from sandlot import telemetry

async def main():
    async with sandlot.local().session() as sandbox:
        result = await sandbox.exec('printf %s "${{TRACEPARENT:-none}}"')
    print(result.stdout, telemetry.tracing(), telemetry.measuring(),
          "opentelemetry.sdk" in sys.modules, sys.modules.get("opentelemetry") is not None)

anyio.run(main)
"""


def run(block: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(block=block)],
                          capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_the_package() -> None:
    # A None entry makes every `import opentelemetry...` fail, as if it were not installed.
    assert run("sys.modules['opentelemetry'] = None") == "none False False False False"


def test_installed_but_never_imported_by_the_program() -> None:
    # sandlot itself never imports the API: no provider can be configured without it.
    assert run("") == "none False False False False"


def test_imported_but_not_configured() -> None:
    assert run("import opentelemetry.trace") == "none False False False True"
