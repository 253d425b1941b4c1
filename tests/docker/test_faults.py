"""Faults: each is a typed error that says what happened, and on_close still runs where it can."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest

import sandlot
from sandlot import (
    BackendUnavailableError,
    CleanupError,
    ImageNotFoundError,
    Process,
    Sandbox,
    SandboxGoneError,
    SandboxPausedError,
    ToolNotFoundError,
)
from sandlot.backends.docker import DockerProvider
from tests import docker_engine

pytestmark = pytest.mark.anyio


async def started(sandbox: Sandbox) -> Process:
    """A background command that has surely begun running in the container."""
    up = anyio.Event()
    process = await sandbox.start("echo up; sleep 300", on_stdout=lambda _line: up.set())
    with anyio.fail_after(30):
        await up.wait()
    return process


async def test_image_missing_says_there_is_no_pull_and_how_to_import(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    before = engine.sandlot_containers()
    provider = sandlot.docker("sandlot-test/not-built:1", on_close="delete",
                              docker_host=engine.host)
    with pytest.raises(ImageNotFoundError) as caught:
        await provider.create()
    message = str(caught.value)
    assert "'sandlot-test/not-built:1' is not in the local store" in message
    assert engine.host in message
    assert "does not pull" in message and "docker import" in message
    assert engine.sandlot_containers() == before


async def test_docker_binary_missing(tmp_path: Path) -> None:
    provider = sandlot.docker("img", on_close="delete", docker_binary=str(tmp_path / "docker"))
    with pytest.raises(ToolNotFoundError, match=r"docker client .* was not found"):
        await provider.create()
    empty_path = sandlot.docker("img", on_close="delete", docker_binary="docker-nowhere")
    with pytest.raises(ToolNotFoundError, match=r"apt-get install docker\.io"):
        await empty_path.create()


async def test_engine_not_reachable_names_the_socket(tmp_path: Path) -> None:
    sock = f"unix://{tmp_path}/nothing.sock"
    provider = sandlot.docker("img", on_close="delete", docker_host=sock)
    expected = re.escape(f"cannot reach the Docker engine at {sock}")
    with pytest.raises(BackendUnavailableError, match=expected):
        await provider.create()


async def test_engine_not_reachable_names_the_context() -> None:
    provider = sandlot.docker("img", on_close="delete", context="sandlot-no-such-context")
    with pytest.raises(BackendUnavailableError, match="context 'sandlot-no-such-context'"):
        await provider.create()


async def test_container_removed_from_outside(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine, tmp_path: Path
) -> None:
    sandbox = await make().create()
    process = await started(sandbox)
    engine.docker("rm", "-f", sandbox.container_id)
    with pytest.raises(SandboxGoneError, match="gone or no longer running"):
        await process.wait()  # the command in flight
    with pytest.raises(SandboxGoneError, match=sandbox.name):
        await sandbox.exec("true")  # the next one
    with pytest.raises(SandboxGoneError):
        await sandbox.copy_out(f"{sandbox.worktree}/x", tmp_path / "x")
    with pytest.raises(SandboxGoneError):
        await sandbox.copy_in(tmp_path, f"{sandbox.worktree}/y")
    assert list(tmp_path.iterdir()) == []  # no staging directory left
    await sandbox.close()  # delete of a container already gone is done, not an error
    assert sandbox.closed


async def test_container_killed_from_outside_then_on_close_removes_it(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    sandbox = await make().create()
    process = await started(sandbox)
    engine.docker("kill", sandbox.container_id)
    with pytest.raises(SandboxGoneError, match=r"no longer running|stopped while"):
        await process.wait()
    with pytest.raises(SandboxGoneError, match="is not running"):
        await sandbox.exec("true")
    await sandbox.close()
    gone = engine.docker("container", "inspect", sandbox.container_id, check=False)
    assert gone.returncode != 0  # on_close=delete removed the dead container


async def test_a_paused_container_fails_calls_within_the_keepalive_bound(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    interval, count = 0.5, 2
    bound = interval * (count + 1)
    sandbox = await make(keepalive_interval=interval, keepalive_count_max=count).create()
    try:
        process = await started(sandbox)
        durable = await sandbox.processes.start("sleep 300")
        engine.docker("pause", sandbox.container_id)
        paused_at = anyio.current_time()
        with pytest.raises(SandboxPausedError, match=r"is paused.*docker unpause"):
            await sandbox.exec("sleep 300")  # a new call: refused at once, never a hang
        with anyio.fail_after(bound + 20):  # generous slack: a shared, loaded machine
            with pytest.raises(SandboxPausedError, match="paused"):
                await process.wait()  # in flight since before the pause
        took = anyio.current_time() - paused_at
        assert took <= bound + 20, f"{took:.1f}s"
        engine.docker("unpause", sandbox.container_id)
        assert (await sandbox.exec("echo back")).stdout == "back\n"  # the next call works
        assert (await durable.info()).running  # the durable process survived the freeze
    finally:
        with contextlib.suppress(Exception):
            engine.docker("unpause", sandbox.container_id)
        await sandbox.close()
    gone = engine.docker("container", "inspect", sandbox.container_id, check=False)
    assert gone.returncode != 0  # nothing left running: the container went with close


async def test_exec_in_flight_when_the_container_is_paused(
    make: Callable[..., DockerProvider], engine: docker_engine.DockerEngine
) -> None:
    sandbox = await make(keepalive_interval=0.5, keepalive_count_max=2).create()
    try:
        outcome: list[BaseException] = []

        async def exec_in_flight() -> None:
            try:
                await sandbox.exec("echo started; sleep 300", timeout=600)
            except SandboxPausedError as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as group:
            group.start_soon(exec_in_flight)
            await anyio.sleep(1)
            engine.docker("pause", sandbox.container_id)
            with anyio.fail_after(1.5 + 20):
                while not outcome:  # noqa: ASYNC110 - the exec in flight is what is awaited
                    await anyio.sleep(0.1)
        assert "has been paused for" in str(outcome[0])
    finally:
        with contextlib.suppress(Exception):
            engine.docker("unpause", sandbox.container_id)
        await sandbox.close()


async def test_engine_stopped_mid_session(tmp_path: Path) -> None:
    # A dedicated engine: stopping the shared one would break every other test.
    if docker_engine.missing_components():
        pytest.skip("engine parts missing (the shared-engine tests report this)")
    with docker_engine.DockerEngine(data_root=tmp_path / "data") as own:
        provider = sandlot.docker(own.busybox_image(), on_close="delete", docker_host=own.host)
        sandbox = await provider.create()
        process = await started(sandbox)
        own.stop(remove_containers=False)
        with pytest.raises((BackendUnavailableError, SandboxGoneError)):
            await process.wait()
        unreachable = re.escape(f"cannot reach the Docker engine at {own.host}")
        with pytest.raises(BackendUnavailableError, match=unreachable):
            await sandbox.exec("true")
        with pytest.raises(CleanupError, match=r"engine is unreachable.*sandlot gc"):
            await sandbox.close()
        assert sandbox.closed
        # Back up: the label lets gc find what close could not remove.
        own.start()
        assert own.sandlot_containers() == [sandbox.name]
    assert not os.path.exists(own.run_dir)
