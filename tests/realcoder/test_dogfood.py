"""`python -m dogfood --backends coder` against the real Coder deployment of this tier.

This is the path an operator takes (`coder whoami` works, a template exists): no --fake-coder.
The real CLI and server decide every workspace state the run checks. `verify` is left out to
keep the tier lean (a cold Go cache in the agent's fresh $HOME costs minutes); a full run is a
manual step, see README "Smoke runs".
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.dogfood.helpers import run_dogfood

from .harness import RealCoder

LEAN = ("exec-streaming,stdin,copy-checksum,timeout-cleanup,"
        "on-close-delete,on-close-stop,on-close-leave,cleanup")  # fmt: skip


def test_dogfood_on_a_real_deployment(real_coder: RealCoder, tmp_path: Path) -> None:
    env = real_coder.cli_env({"PATH": f"{real_coder.binary.parent}:{os.environ['PATH']}"})
    run = run_dogfood(
        tmp_path, "--backends", "coder", "--coder-template", real_coder.template_single,
        "--scenarios", LEAN, env=env,
    )  # fmt: skip
    assert run.code == 0, run.stderr
    backend = run.backend("coder")
    assert backend["status"] == "ran" and backend["details"]["fake"] is False
    assert backend["details"]["user"] == real_coder.username
    for item in run.report["scenarios"]:
        assert item["status"] == "passed", item
    states = {
        name: run.scenario("coder", name)["details"]["states"]
        for name in ("on-close-delete", "on-close-stop", "on-close-leave")
    }
    assert states["on-close-delete"]["delete"] in ("absent", "delete/deleted")
    assert states["on-close-stop"]["after_close"] == "stop/stopped"
    assert states["on-close-leave"]["after_close"] == "start/running"
    # Nothing of this run is left on the deployment.
    names = [ws["name"] for ws in real_coder.list_workspaces()]
    assert not [n for n in names if n.startswith("sandlot-df-")], names
