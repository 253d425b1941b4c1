"""`python -m dogfood --backends coder` against the fake Coder deployment, for real.

The run creates one workspace per on_close value through the coder backend and checks each
through the (fake) `coder` CLI. `verify` is left out here to keep the suite lean: it is the
same exec path the other scenarios take (and runs in the local test); a full --fake-coder run
is in README "Smoke runs".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.dogfood.helpers import run_dogfood

testing = pytest.importorskip("sandlot.testing")
pytest.importorskip("sandlot.backends.coder")

LEAN = ("exec-streaming,stdin,copy-checksum,run-code,timeout-cleanup,"
        "on-close-delete,on-close-stop,on-close-leave,cleanup")  # fmt: skip


def test_fake_coder_run_checks_every_on_close_through_the_cli(tmp_path: Path) -> None:
    run = run_dogfood(tmp_path, "--backends", "coder", "--fake-coder", "--scenarios", LEAN)
    assert run.code == 0, run.stderr
    backend = run.backend("coder")
    assert backend["status"] == "ran"
    assert backend["details"]["fake"] is True and backend["details"]["user"] == "testuser"
    assert run.names("coder") == [
        "create", "exec-streaming", "stdin", "copy-checksum", "run-code", "timeout-cleanup",
        "on-close-delete", "on-close-stop", "on-close-leave", "cleanup",
    ]  # fmt: skip
    for item in run.report["scenarios"]:
        assert item["status"] == "passed", item
    states = {
        name: run.scenario("coder", name)["details"]["states"]
        for name in ("on-close-delete", "on-close-stop", "on-close-leave")
    }
    assert states["on-close-delete"] == {"delete": "absent"}
    assert states["on-close-stop"] == {"after_close": "stop/stopped", "after_cleanup": "absent"}
    assert states["on-close-leave"] == {
        "after_close": "start/running", "after_second_close": "absent",
    }  # fmt: skip
    assert run.scenario("coder", "cleanup")["details"]["deleted_leftovers"] == []
    assert "reading the marker through a second connection" in run.stderr


def test_coder_cli_that_is_not_logged_in_is_skipped_with_its_error(tmp_path: Path) -> None:
    with testing.FakeCoderDeployment(tmp_path / "deployment") as fake:
        exe = fake.install(tmp_path / "bin")
        env = fake.env(logged_in=False)
        env.pop("CODER_URL", None)
        env.pop("CODER_SESSION_TOKEN", None)
        env["PATH"] = f"{exe.parent}:/usr/bin:/bin"
        run = run_dogfood(tmp_path, "--backends", "coder", "--scenarios", "stdin", env=env)
    assert run.code == 0
    reason = run.backend("coder")["reason"]
    assert reason.startswith("`coder whoami` failed: ")
    assert "You are not logged in" in reason and "--fake-coder" in reason
    assert fake.token not in run.stderr + run.stdout + reason
