"""fanout.run(..., fork_from=) and `sandlot fanout --fork-from-setup`: the set-up runs once, every
job starts from its result in a fork of its own, and everything is closed at the end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import sandlot
from sandlot import ConfigurationError, Sandbox
from sandlot.fanout import Slot, run

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.anyio


async def test_run_with_fork_from_gives_each_job_a_fork() -> None:
    async with sandlot.local().session() as prepared:
        await prepared.exec("echo prepared > state.txt", check=True)

        async def job(sandbox: Sandbox, slot: Slot) -> str:
            await sandbox.exec(f"echo {slot.index} >> state.txt", check=True)
            return (await sandbox.exec("cat state.txt", check=True)).stdout

        report = await run(job, n=3, fork_from=prepared)
        assert report.ok
        assert [o.value for o in report.outcomes] == [f"prepared\n{i}\n" for i in range(3)]
        assert all(o.closed for o in report.outcomes)
        assert (await prepared.exec("cat state.txt")).stdout == "prepared\n"
        with pytest.raises(ConfigurationError, match="not both"):
            await run(job, sandlot.local(), n=2, fork_from=prepared)


def test_cli_fork_from_setup_runs_the_setup_once(tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    proc = subprocess.run(
        [sys.executable, "-m", "sandlot", "fanout", "-n", "3", "-q", "--report", str(report),
         "--fork-from-setup", "echo set-up >> log.txt", "--",
         "echo run $SANDLOT_FANOUT_INDEX >> log.txt; cat log.txt"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    data = json.loads(report.read_text())
    tails = [s["command"]["stdout_tail"] for s in data["sandboxes"]]
    assert tails == [f"set-up\nrun {i}\n" for i in range(3)]
    failed = subprocess.run(
        [sys.executable, "-m", "sandlot", "fanout", "-n", "2", "--fork-from-setup", "exit 3",
         "--", "true"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )
    assert failed.returncode == 1 and "set-up command failed (exit 3)" in failed.stderr
