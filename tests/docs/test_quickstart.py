"""scripts/quickstart says what it is doing and, at the end, how to put `sandlot` on PATH
(issue 26: it printed nothing for 35 s, and every `sandlot` line of the README then failed)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_quickstart_prints_its_steps_and_the_activation_hint() -> None:
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    done = subprocess.run([str(REPO / "scripts" / "quickstart")], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("quickstart: ")]
    assert said[0].startswith("quickstart: [1/2] setting up .venv"), said  # before the install
    assert any("[2/2] running examples/wordcount's tests" in line for line in said), said
    assert f"quickstart:       source {REPO}/.venv/bin/activate" in said, said
    assert any(f'export PATH="{REPO}/.venv/bin:$PATH"' in line for line in said), said
    assert "OK" in done.stderr  # the example's unittest run itself


def test_the_activation_it_prints_puts_sandlot_on_path() -> None:
    path = ":".join(p for p in os.environ["PATH"].split(":") if not p.startswith(str(REPO)))
    done = subprocess.run(["bash", "-c", f"source {REPO}/.venv/bin/activate && command -v sandlot"],
                          capture_output=True, text=True, env={**os.environ, "PATH": path},
                          timeout=60)
    assert done.stdout.strip() == f"{REPO}/.venv/bin/sandlot", done
