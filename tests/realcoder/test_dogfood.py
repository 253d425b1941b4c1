"""`python -m dogfood --backends coder` against the real Coder deployment of this tier.

This is the path an operator takes (`coder whoami` works, a template exists): no --fake-coder.
The real CLI and server decide every workspace state the run checks. `verify` is left out to
keep the tier lean (a cold Go cache in the agent's fresh $HOME costs minutes); a full run is a
manual step, see README "Smoke runs".
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.dogfood.helpers import DogfoodRun, run_dogfood

from .harness import RealCoder

LEAN = ("exec-streaming,stdin,copy-checksum,timeout-cleanup,"
        "on-close-delete,on-close-stop,on-close-leave,cleanup")  # fmt: skip


# What a scenario's error says when Coder's own tailnet stalled the SSH stream and sandlot's
# keepalive bound ended the call (adr/0029): the one failure this test gives a second chance.
TRANSPORT_STALL = "Server not responding to keepalive"


def test_dogfood_on_a_real_deployment(real_coder: RealCoder, tmp_path: Path) -> None:
    env = real_coder.cli_env({"PATH": f"{real_coder.binary.parent}:{os.environ['PATH']}"})

    def dogfood(where: Path, scenarios: str) -> DogfoodRun:
        where.mkdir(exist_ok=True)
        return run_dogfood(
            where, "--backends", "coder", "--coder-template", real_coder.template_single,
            "--scenarios", scenarios, env=env,
        )  # fmt: skip

    run = dogfood(tmp_path / "first", LEAN)
    stalled = stalled_scenarios(run)
    if stalled:
        # Run those again on a new workspace: they must pass there, and the first run's other
        # scenarios must still have passed (checked below on the first report).
        again = dogfood(tmp_path / "again", ",".join(dict.fromkeys([*stalled, "cleanup"])))
        assert again.code == 0, again.stderr
        for item in run.report["scenarios"]:
            if item["scenario"] in stalled:
                item.update(again.scenario("coder", item["scenario"]))
    else:
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


def stalled_scenarios(run: DogfoodRun) -> list[str]:
    """Scenarios that failed only because the SSH stream stalled under them (keepalive bound)."""
    failed = [item for item in run.report["scenarios"] if item["status"] != "passed"]
    if not all(TRANSPORT_STALL in (item.get("error") or "") for item in failed):
        return []  # another kind of failure: the first run's assertions report it
    return [item["scenario"] for item in failed]


def test_only_a_keepalive_stall_earns_a_second_run() -> None:
    def report(*items: tuple[str, str, str | None]) -> DogfoodRun:
        scenarios = [{"backend": "coder", "scenario": n, "status": st, "error": e}
                     for n, st, e in items]  # fmt: skip
        return DogfoodRun(1, "", "", {"scenarios": scenarios, "backends": []})

    stall = f"ConnectionLostError: [coder, x] ... dropped: {TRANSPORT_STALL}; the next call"
    assert stalled_scenarios(report(("exec", "passed", None), ("stdin", "failed", stall))) == [
        "stdin"
    ]
    # A different failure beside the stall: no second chance for anything.
    mixed = report(("stdin", "failed", stall), ("copy", "failed", "sha256 differs"))
    assert stalled_scenarios(mixed) == []
    assert stalled_scenarios(report(("exec", "passed", None))) == []
