"""What the docker backend does to the engine: labels, names, options, limits, mounts, attach,
on_close. Each behaviour is checked from both sides: inside the sandbox and in `docker inspect`."""

from __future__ import annotations

import json
import re
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandlot import HostPathNotFoundError, SandboxStartError
from sandlot.backends.docker import DockerProvider
from tests import docker_engine
from tests.docker.conftest import inspect

pytestmark = pytest.mark.anyio

Open = Callable[..., Any]


async def test_labels_name_and_long_lived_command(
    opened: Open, engine: docker_engine.DockerEngine
) -> None:
    sandbox = await opened()
    assert re.fullmatch(r"sandlot-[0-9a-f]{8}", sandbox.name)
    labels = json.loads(inspect(engine, sandbox.container_id, "{{json .Config.Labels}}"))
    assert labels["sandlot.managed"] == "true"
    assert labels["sandlot.on_close"] == "delete"
    created = datetime.strptime(labels["sandlot.created"], "%Y-%m-%dT%H:%M:%SZ")
    assert abs(created.replace(tzinfo=UTC) - datetime.now(UTC)) < timedelta(minutes=5)
    host, pid, _ticks = labels["sandlot.owner"].split("/")
    assert host == socket.gethostname() and int(pid) > 0
    assert inspect(engine, sandbox.container_id, "{{.HostConfig.NetworkMode}}") == "none"
    assert inspect(engine, sandbox.container_id, "{{.HostConfig.Init}}") == "true"
    assert (await sandbox.exec("pwd")).stdout == "/workspace\n"


async def test_given_name_and_a_taken_name(opened: Open, make: Callable[..., DockerProvider],
                                           engine: docker_engine.DockerEngine) -> None:
    sandbox = await opened(name="sandlot-test-named")
    assert sandbox.name == "sandlot-test-named"
    with pytest.raises(SandboxStartError, match=r"already exists.*attach="):
        await make(name="sandlot-test-named").create()
    # The failed attempt did not touch the existing container.
    assert (await sandbox.exec("echo still here")).stdout == "still here\n"


async def test_env_workdir_and_user(opened: Open) -> None:
    sandbox = await opened(
        env={"CONTAINER_VAR": "it's \"quoted\"\nand two lines", "HOME": "/tmp/home"},
        workdir="/srv/work tree", user="1000:1000",
    )  # fmt: skip
    assert sandbox.worktree == "/srv/work tree"
    result = await sandbox.exec('pwd; id -u; printf %s "$CONTAINER_VAR"; echo; echo $HOME')
    assert result.stdout == "/srv/work tree\n1000\nit's \"quoted\"\nand two lines\n/tmp/home\n"
    # The worktree belongs to the sandbox user, so it can write there.
    await sandbox.exec("echo x > file", check=True)
    # Per-command env wins over the container's, and names the client reads still pass.
    per = await sandbox.exec(
        ["sh", "-c", 'echo "$CONTAINER_VAR|$HOME|$DOCKER_HOST"'],
        env={"CONTAINER_VAR": "over", "HOME": "/h", "DOCKER_HOST": "tcp://nowhere:1"},
    )  # fmt: skip
    assert per.stdout == "over|/h|tcp://nowhere:1\n"


async def test_network_none_has_only_loopback(opened: Open) -> None:
    sandbox = await opened()
    interfaces = await sandbox.exec("ls /sys/class/net")
    assert interfaces.stdout.split() == ["lo"]


async def test_limits_reach_the_engine_and_bind(
    opened: Open, engine: docker_engine.DockerEngine
) -> None:
    sandbox = await opened(memory="64m", cpus=0.5, pids_limit=40)
    host_config = json.loads(inspect(engine, sandbox.container_id, "{{json .HostConfig}}"))
    assert host_config["Memory"] == 64 << 20
    assert host_config["NanoCpus"] == 500_000_000
    assert host_config["PidsLimit"] == 40
    # The pids limit is real: far more sleepers than allowed cannot all start.
    result = await sandbox.exec(
        "i=0; while [ $i -lt 60 ]; do sleep 30 & i=$((i+1)); done 2>/dev/null; "
        "jobs -p | wc -l", timeout=60,
    )  # fmt: skip
    assert int(result.stdout.strip() or 0) < 60


async def test_mounts_read_only_by_default_and_writable_when_asked(
    opened: Open, tmp_path: Path
) -> None:
    (tmp_path / "ro").mkdir()
    (tmp_path / "ro" / "given.txt").write_text("from host\n")
    (tmp_path / "rw").mkdir()
    sandbox = await opened(mounts=[f"{tmp_path}/ro:/mnt/ro", f"{tmp_path}/rw:/mnt/rw:rw"])
    assert (await sandbox.exec("cat /mnt/ro/given.txt")).stdout == "from host\n"
    denied = await sandbox.exec("echo x > /mnt/ro/new")
    assert denied.exit_code != 0 and "Read-only" in denied.stderr
    await sandbox.exec("echo written > /mnt/rw/out.txt", check=True)
    assert (tmp_path / "rw" / "out.txt").read_text() == "written\n"


async def test_missing_mount_source_is_typed_and_creates_nothing(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine, tmp_path: Path
) -> None:
    before = engine.sandlot_containers()
    with pytest.raises(HostPathNotFoundError, match="mount source does not exist"):
        await make(mounts=[f"{tmp_path}/absent:/x"]).create()
    assert engine.sandlot_containers() == before


async def test_bad_limit_rejected_by_the_engine_leaves_nothing(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    before = engine.sandlot_containers()
    # Valid syntax, but below the engine's minimum: the engine refuses to create it.
    with pytest.raises(SandboxStartError, match="docker run"):
        await make(memory="1k").create()
    assert engine.sandlot_containers() == before


async def test_security_opt_reaches_the_engine_and_binds(
    opened: Open, engine: docker_engine.DockerEngine
) -> None:
    default = await opened()
    assert inspect(engine, default.container_id, "{{json .HostConfig.SecurityOpt}}") == "null"
    sandbox = await opened(security_opt=["seccomp=unconfined", "no-new-privileges"])
    given = json.loads(inspect(engine, sandbox.container_id, "{{json .HostConfig.SecurityOpt}}"))
    assert given == ["seccomp=unconfined", "no-new-privileges"]
    # The kernel's view from inside: no seccomp filter (2 under the engine's default profile)
    # and no_new_privs set, for every command the sandbox runs.
    status = "grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status"
    assert (await default.exec(status)).stdout.split() == ["NoNewPrivs:", "0", "Seccomp:", "2"]
    assert (await sandbox.exec(status)).stdout.split() == ["NoNewPrivs:", "1", "Seccomp:", "0"]


async def test_security_opt_the_engine_refuses_leaves_nothing(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    before = engine.sandlot_containers()
    # Well-formed for sandlot (the engine judges the option itself): refused by `docker run`.
    with pytest.raises(SandboxStartError, match="docker run"):
        await make(security_opt=["no-such-option=1"]).create()
    assert engine.sandlot_containers() == before


@pytest.mark.parametrize("policy", ["delete", "stop", "leave"])
async def test_on_close_policies(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine, policy: str
) -> None:
    sandbox = await make(on_close=policy).create()
    await sandbox.close()
    state = engine.docker("container", "inspect", "--format", "{{.State.Status}}",
                          sandbox.container_id, check=False)
    try:
        expected = {"delete": None, "stop": "exited", "leave": "running"}[policy]
        if expected is None:
            assert state.returncode != 0 and "No such" in state.stderr
        else:
            assert state.stdout.strip() == expected
    finally:
        engine.docker("rm", "-f", sandbox.container_id, check=False)


async def test_attach_to_a_stopped_container_starts_it(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    original = await make(on_close="stop", name="sandlot-test-attach").create()
    await original.exec("echo kept > /workspace/mark", check=True)
    await original.close()  # stopped, not removed
    provider = make(attach="sandlot-test-attach", on_close="delete")
    attached = await provider.create()
    try:
        assert attached.container_id == original.container_id
        assert (await attached.exec("cat mark")).stdout == "kept\n"
    finally:
        await attached.close()
    assert engine.docker("container", "inspect", original.container_id,
                         check=False).returncode != 0


async def test_attach_to_a_foreign_container_with_leave(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine, image: str
) -> None:
    # A container sandlot did not make: attach works in it and `leave` leaves it running.
    cid = engine.docker("run", "-d", "--network", "none", "--name", "not-sandlot-made",
                        image, "sleep", "300").stdout.strip()
    try:
        attached = await make(attach="not-sandlot-made", on_close="leave", workdir="/w").create()
        assert (await attached.exec("pwd")).stdout == "/w\n"
        await attached.close()
        assert inspect(engine, cid, "{{.State.Running}}") == "true"
    finally:
        engine.docker("rm", "-f", cid, check=False)


async def test_attach_to_nothing_is_typed(make: Callable[..., DockerProvider]) -> None:
    with pytest.raises(SandboxStartError, match="no container 'no-such-box'"):
        await make(attach="no-such-box", on_close="leave").create()


async def test_cancelled_create_leaves_nothing(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    before = engine.sandlot_containers()
    cancelled = 0
    # Early (inside `docker run`) and later (the container may already exist). On a fast,
    # idle machine the later deadline can come after create() finished: then the test closes
    # the sandbox itself, and still requires the early cancellation to have happened.
    for delay in (0.02, 0.1, 0.3):
        made: list[object] = []
        with anyio.move_on_after(delay) as scope:
            made.append(await make().create())
        if scope.cancelled_caught:
            cancelled += 1
        for sandbox in made:
            await sandbox.close()  # type: ignore[attr-defined]
        assert engine.sandlot_containers() == before
    assert cancelled >= 1


def test_sandlot_exec_cli_on_docker(engine: docker_engine.DockerEngine, image: str) -> None:
    import subprocess
    import sys

    config = json.dumps({"type": "docker", "image": image, "on_close": "delete",
                         "docker_host": engine.host})
    before = engine.sandlot_containers()
    done = subprocess.run(
        [sys.executable, "-m", "sandlot", "exec", "--provider-config", config, "--",
         "sh", "-c", "echo hi from $(cat /proc/1/comm); exit 3"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stdout == "hi from docker-init\n"
    assert engine.sandlot_containers() == before  # on_close=delete ran
