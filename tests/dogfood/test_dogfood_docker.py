"""`python -m dogfood --backends docker` on the private test engine, for real.

The busybox image keeps this fast: the sandbox has a shell and coreutils-like applets but no
toolchains, so the run also shows how a scenario reports what the image lacks. (A full run
with the toolchain image passes every scenario but takes minutes: Go compiles its standard
library into a fresh cache; that belongs in a manual run, see README "Smoke runs".)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dogfood.scenarios import SCENARIOS
from tests.dogfood.helpers import run_dogfood

docker_backend = pytest.importorskip("tests.backends.docker")


def test_docker_run_on_a_private_engine(tmp_path: Path) -> None:
    engine = docker_backend.engine()
    image = engine.busybox_image()
    run = run_dogfood(
        tmp_path, "--backends", "docker", "--docker-host", engine.host, "--docker-image", image
    )
    assert run.code == 0, run.stderr
    backend = run.backend("docker")
    assert backend["status"] == "ran"
    assert backend["details"]["image"] == image
    assert backend["details"]["docker_engine"]
    assert run.names("docker") == ["create", *SCENARIOS, "close"]
    for name in ("create", "exec-streaming", "stdin", "copy-checksum", "timeout-cleanup", "close"):
        assert run.scenario("docker", name)["status"] == "passed", run.scenario("docker", name)
    # busybox has no toolchains: said plainly, per missing program.
    verify = run.scenario("docker", "verify")
    assert verify["status"] == "skipped"
    assert verify["error"].startswith("no verify tool is installed in the sandbox (missing: ")
    assert "python3" in verify["error"] and "go" in verify["error"]
    modes = run.scenario("docker", "run-code")
    assert modes["status"] == "skipped"
    assert "python3" in modes["error"] and "bash" in modes["error"]
    # The close check looked through the engine; look again: the container is gone.
    container = run.scenario("docker", "close")["details"]["container"]
    listed = engine.docker("ps", "-a", "-q", "--no-trunc").stdout.split()
    assert container and container not in listed


def test_engine_without_an_image_is_skipped_with_the_reason(tmp_path: Path) -> None:
    engine = docker_backend.engine()
    run = run_dogfood(
        tmp_path, "--backends", "docker", "--docker-host", engine.host,
        env={"SANDLOT_DOGFOOD_DOCKER_IMAGE": ""},
    )  # fmt: skip
    assert run.code == 0
    reason = run.backend("docker")["reason"]
    assert f"an engine answers at the engine at {engine.host}, but no image was given" in reason
    assert "--docker-image" in reason
    missing = run_dogfood(
        tmp_path, "--backends", "docker", "--docker-host", engine.host,
        "--docker-image", "sandlot-test/no-such-image:1",
    )  # fmt: skip
    assert "'sandlot-test/no-such-image:1' is not in the engine's local store" in (
        missing.backend("docker")["reason"]
    )
