"""`python -m dogfood` on the local backend, for real: the report, the table, the exit codes."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import platform
import shutil
from pathlib import Path

import pytest

from dogfood.scenarios import SCENARIOS, example_projects
from tests.dogfood.helpers import REPO_ROOT, DogfoodRun, run_dogfood


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> DogfoodRun:
    """One full run on local (shared by the tests that read it)."""
    return run_dogfood(tmp_path_factory.mktemp("dogfood"), "--backends", "local", "--json")


def test_full_local_run_passes_and_reports_every_scenario(local_run: DogfoodRun) -> None:
    assert local_run.code == 0, local_run.stderr
    report = local_run.report
    assert report["ok"] is True
    assert local_run.names("local") == ["create", *SCENARIOS, "close"]
    for item in report["scenarios"]:
        assert item["status"] in ("passed", "skipped"), item
        assert isinstance(item["duration"], float | int) and item["duration"] >= 0
        assert (item["error"] is None) == (item["status"] == "passed"), item
    counts = {s: sum(i["status"] == s for i in report["scenarios"]) for s in
              ("passed", "failed", "skipped")}  # fmt: skip
    assert report["summary"] == counts
    assert local_run.backend("local")["status"] == "ran"


def test_report_shape_and_versions(local_run: DogfoodRun) -> None:
    report = local_run.report
    assert report["schema"] == 1
    for key in ("started_at", "finished_at", "duration", "versions", "options", "backends"):
        assert key in report
    assert report["finished_at"] >= report["started_at"]
    versions = report["versions"]
    assert versions["sandlot"] == importlib.metadata.version("sandlot")
    assert versions["python"] == platform.python_version()
    assert set(versions["tools"]) >= {"go", "node", "docker", "coder"}
    # --json prints the same report on stdout as the file holds.
    assert json.loads(local_run.stdout) == report


def test_scenarios_measured_what_they_claim(local_run: DogfoodRun) -> None:
    streaming = local_run.scenario("local", "exec-streaming")["details"]
    assert streaming["stdout_lines"] == 101 and streaming["callbacks_before_exit"] >= 1
    copy = local_run.scenario("local", "copy-checksum")["details"]
    assert copy["files"] == 5 and len(copy["sha256"]["blob.bin"]) == 64
    timeout = local_run.scenario("local", "timeout-cleanup")["details"]
    assert timeout["processes"] == 3
    modes = local_run.scenario("local", "run-code")
    if importlib.util.find_spec("sandlot.modes") is None:
        assert modes["status"] == "skipped"
    else:
        assert modes["status"] == "passed"
        assert "shell" in modes["details"]["modes"]


def test_verify_runs_on_every_bundled_example(local_run: DogfoodRun) -> None:
    verify = local_run.scenario("local", "verify")
    if importlib.util.find_spec("sandlot.verify") is None:
        assert verify["status"] == "skipped"
        assert "sandlot.verify is not in this sandlot build" in verify["error"]
        return
    assert verify["status"] == "passed", verify
    projects = verify["details"]["projects"]
    assert set(projects) == {p.name for p in example_projects(REPO_ROOT)}
    assert {"wordcount", "intstats"} <= set(projects)
    assert projects["wordcount"]["tests"]["passed"] > 0
    assert projects["intstats"]["tests"]["passed"] > 0


def test_progress_and_table(local_run: DogfoodRun) -> None:
    err = local_run.stderr
    for name in ("create", *SCENARIOS, "close"):
        assert f"[local] {name} ..." in err
    assert "[local] exec-streaming ok (" in err
    # With --json the table goes to stderr, after the progress lines.
    assert "backend  scenario" in err
    assert "backends: 1 ran (local), 0 skipped" in err


def _path_with(tmp_path: Path, *programs: str) -> str:
    """A PATH with only these programs (when installed) besides /usr/bin and /bin."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for program in programs:
        found = shutil.which(program)
        if found:
            (bin_dir / program).symlink_to(found)
    return f"{bin_dir}:/usr/bin:/bin"


def test_unavailable_backends_are_skipped_with_the_reason(tmp_path: Path) -> None:
    run = run_dogfood(
        tmp_path, "--backends", "local,docker,coder", "--scenarios", "stdin",
        # An engine address where nothing listens, and a PATH without a coder CLI.
        env={"DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
             "PATH": _path_with(tmp_path, "docker")},
    )  # fmt: skip
    assert run.code == 0, run.stderr
    docker, coder = run.backend("docker"), run.backend("coder")
    assert docker["status"] == "skipped" and coder["status"] == "skipped"
    if importlib.util.find_spec("sandlot.backends.docker") is None:
        assert "docker backend (sandlot.backends.docker) is not in this build" in docker["reason"]
    elif shutil.which("docker") is None:
        assert "docker client is not on PATH" in docker["reason"]
    else:
        assert docker["reason"].startswith(
            f"no Docker engine answered at the engine at unix://{tmp_path}/no-engine.sock: "
        ), docker["reason"]
        assert "--docker-host / DOCKER_HOST" in docker["reason"]
    if importlib.util.find_spec("sandlot.backends.coder") is None:
        assert "coder backend (sandlot.backends.coder) is not in this build" in coder["reason"]
    else:
        assert "coder CLI is not on PATH" in coder["reason"] and "--fake-coder" in coder["reason"]
    assert f"[docker] skipped: {docker['reason']}" in run.stderr
    assert f"[coder] skipped: {coder['reason']}" in run.stderr
    assert run.names("docker") == [] and run.names("coder") == []
    assert run.names("local") == ["create", "stdin", "close"]
    # The table lists the skipped backends too.
    assert "docker   (backend)  skipped" in run.stdout


def test_strict_turns_skips_into_failure(tmp_path: Path) -> None:
    run = run_dogfood(
        tmp_path, "--backends", "local,coder", "--scenarios", "stdin", "--strict",
        env={"PATH": _path_with(tmp_path)},
    )  # fmt: skip
    assert run.backend("coder")["status"] == "skipped"
    assert run.code == 1


def test_injected_failure_fails_the_run(tmp_path: Path) -> None:
    run = run_dogfood(
        tmp_path, "--backends", "local", "--scenarios", "stdin,copy-checksum",
        "--inject-failure", "stdin",
    )  # fmt: skip
    assert run.code == 1
    assert run.report["ok"] is False
    failed = run.scenario("local", "stdin")
    assert failed["status"] == "failed"
    assert failed["error"].startswith("CommandFailed: command exited with status 86")
    # The other scenarios ran and passed; the sandbox was still closed.
    assert run.scenario("local", "copy-checksum")["status"] == "passed"
    assert run.scenario("local", "close")["status"] == "passed"
    assert "[local] stdin FAILED" in run.stderr
    assert "local    stdin          FAILED" in run.stdout


def test_injection_through_the_environment_targets_one_backend(tmp_path: Path) -> None:
    only_docker = run_dogfood(
        tmp_path, "--backends", "local", "--scenarios", "stdin",
        env={"SANDLOT_DOGFOOD_INJECT_FAILURE": "stdin@docker"},
    )  # fmt: skip
    assert only_docker.code == 0
    local = run_dogfood(
        tmp_path, "--backends", "local", "--scenarios", "stdin",
        env={"SANDLOT_DOGFOOD_INJECT_FAILURE": "stdin@local"},
    )  # fmt: skip
    assert local.code == 1 and local.scenario("local", "stdin")["status"] == "failed"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--backends", "local,podman"], "unknown backends ['podman']"),
        (["--scenarios", "nope"], "unknown scenarios ['nope']"),
        (["--coder-param", "novalue"], "expected NAME=VALUE"),
        (["--docker-options", "[1]"], "JSON object"),
    ],
)
def test_bad_options_exit_2_before_running(
    tmp_path: Path, args: list[str], message: str
) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "dogfood", "--report", str(tmp_path / "r.json"), *args],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "r.json").exists()
