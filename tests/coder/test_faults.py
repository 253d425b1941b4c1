"""Faults injected into the fake Coder deployment: each gives its typed error (or is ridden
out), and leaves no workspace in a state `on_close` did not ask for, no agent process alive
(the `fake` fixture checks the latter at the end of every test)."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import anyio
import pytest

from sandlot import (
    CleanupError,
    CoderAgentError,
    CoderBuildFailedError,
    CoderCLIError,
    CoderNotLoggedInError,
    ConnectionLostError,
)
from sandlot.backends.coder.sandbox import CoderSandbox
from sandlot.testing.ports import listen_port

from .deployment import SINGLE, ArgvRecorder, FakeDeployment

pytestmark = pytest.mark.anyio


def _provider(fake: FakeDeployment, recorder: ArgvRecorder | None = None, **kw: object):  # type: ignore[no-untyped-def]
    kw.setdefault("template", SINGLE)
    kw.setdefault("on_close", "delete")
    kw.setdefault("workspace_name", "fault")
    if recorder is not None:
        kw["coder_binary"] = str(recorder.path)
    return fake.provider(**kw)


@pytest.fixture
def recorder(fake: FakeDeployment, tmp_path: Path) -> ArgvRecorder:
    return ArgvRecorder(fake.binary, tmp_path)


async def test_agent_that_connects_late_is_waited_for(
    fake: FakeDeployment, recorder: ArgvRecorder
) -> None:
    fake.fake.set_agent_connects_late(lists=4)
    async with _provider(fake, recorder).session() as sandbox:
        assert (await sandbox.exec("echo late")).stdout == "late\n"
    lists = [c for c in recorder.calls() if c[0] == "list"]
    assert len(lists) >= 1 + 1 + 4  # precheck, after create, and the polls that saw connecting
    assert fake.find("fault") is None


async def test_lifecycle_stuck_in_starting_hits_the_deadline(fake: FakeDeployment) -> None:
    fake.fake.set_lifecycle("starting")
    with pytest.raises(CoderAgentError, match="not ready within 2s") as caught:
        await _provider(fake, ready_timeout=2).create()
    assert "lifecycle_state=starting" in str(caught.value)
    assert fake.find("fault") is None  # on_close="delete" applied


async def test_start_error_fails_fast_with_the_state(fake: FakeDeployment) -> None:
    fake.fake.set_lifecycle("start_error")
    with pytest.raises(CoderAgentError, match="start_error") as caught:
        # A long deadline: the error must come from the state, not from the clock.
        with anyio.fail_after(60):
            await _provider(fake, ready_timeout=600).create()
    assert caught.value.lifecycle_state == "start_error" and caught.value.agent == "main"
    assert fake.find("fault") is None


@pytest.mark.parametrize("state", ["shutting_down", "shutdown_error", "off"])
async def test_shutting_down_agent_fails_fast(fake: FakeDeployment, state: str) -> None:
    fake.fake.set_lifecycle(state)
    with pytest.raises(CoderAgentError, match="shutting down") as caught:
        with anyio.fail_after(60):
            await _provider(fake, on_close="stop", ready_timeout=600).create()
    assert f"lifecycle_state={state}" in str(caught.value)
    assert fake.status("fault") == "stopped"  # on_close="stop" applied
    fake.cli("delete", "fault", "--yes")


async def test_start_timeout_warns_and_goes_on(
    fake: FakeDeployment, caplog: pytest.LogCaptureFixture
) -> None:
    fake.fake.set_lifecycle("start_timeout")
    with caplog.at_level(logging.WARNING, logger="sandlot.coder"):
        async with _provider(fake).session() as sandbox:
            assert (await sandbox.exec("echo usable")).stdout == "usable\n"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("start_timeout" in r.getMessage() for r in warnings)
    assert fake.find("fault") is None


async def test_prebuild_race_is_retried(fake: FakeDeployment, recorder: ArgvRecorder) -> None:
    fake.fake.fail_ssh_with_shutting_down(2)
    async with _provider(fake, recorder).session() as sandbox:
        assert (await sandbox.exec("echo through")).stdout == "through\n"
    ssh_calls = [c for c in recorder.calls() if c[0] == "ssh"]
    assert len(ssh_calls) == 3  # two refused with "agent is shutting down", then the one kept
    assert fake.find("fault") is None


async def test_prebuild_race_that_never_ends_is_a_typed_error(fake: FakeDeployment) -> None:
    fake.fake.fail_ssh_with_shutting_down(1000)
    with pytest.raises(CoderAgentError, match="did not answer within 2s") as caught:
        await _provider(fake, ssh_ready_timeout=2).create()
    assert "agent is shutting down" in str(caught.value)
    assert fake.find("fault") is None
    fake.fake.clear_faults()


@pytest.mark.parametrize("on_close", ["delete", "stop", "leave"])
async def test_create_failing_after_the_workspace_exists(
    fake: FakeDeployment, on_close: str
) -> None:
    fake.fake.fail_create_after_workspace_exists()
    with pytest.raises(CoderCLIError, match="watch build") as caught:
        await _provider(fake, on_close=on_close).create()
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    if on_close == "leave":
        assert "left as is" in notes
        assert fake.status("fault") == "running"
    else:
        assert f"applied '{on_close}'" in notes
        assert fake.status("fault") == {"delete": None, "stop": "stopped"}[on_close]
    fake.delete_quietly("fault")


async def test_create_failing_and_cleanup_failing_reports_both(fake: FakeDeployment) -> None:
    fake.fake.fail_create_after_workspace_exists()
    fake.fake.fail_next_build("delete refused by the provisioner", transition="delete")
    with pytest.raises(CleanupError) as caught:
        await _provider(fake).create()
    message = str(caught.value)
    assert "CoderCLIError" in message and "watch build" in message  # the create's error
    assert "delete refused by the provisioner" in message  # the cleanup's error
    assert "coder list" in message  # what to do
    assert isinstance(caught.value.__cause__, CoderCLIError)
    fake.fake.clear_faults()
    fake.cli("delete", "fault", "--yes")
    assert fake.find("fault") is None


async def test_build_that_fails(fake: FakeDeployment) -> None:
    fake.fake.fail_next_build("terraform apply: exit status 1")
    with pytest.raises(CoderBuildFailedError) as caught:
        await _provider(fake).create()
    assert caught.value.job_error == "terraform apply: exit status 1"
    assert "terraform apply: exit status 1" in str(caught.value)
    assert caught.value.exit_code == 1
    # The build log's tail, as the CLI streamed it, is kept and shown.
    assert "Planning infrastructure" in caught.value.build_log
    assert "build log (tail):" in str(caught.value)
    assert fake.find("fault") is None


async def test_start_build_that_fails_on_attach(fake: FakeDeployment) -> None:
    fake.create_workspace("stopped", SINGLE)
    fake.cli("stop", "stopped", "--yes")
    fake.fake.fail_next_build("no capacity", workspace="stopped")
    with pytest.raises(CoderBuildFailedError, match="no capacity"):
        await fake.provider(workspace="stopped", on_close="leave").create()
    fake.cli("delete", "stopped", "--yes")


async def test_connection_dropped_mid_command_then_reconnects(fake: FakeDeployment) -> None:
    fake.fake.drop_connection_on("DROP-HERE", times=1)
    async with _provider(fake).session() as sandbox:
        assert isinstance(sandbox, CoderSandbox)
        with pytest.raises(ConnectionLostError, match="next call reconnects"):
            await sandbox.exec("echo DROP-HERE; sleep 30", timeout=60)
        assert (await sandbox.exec("echo again")).stdout == "again\n"
        assert sandbox.connection.reconnects == 1
        # A background process on the old connection reports the drop too, not a hang.
    assert fake.find("fault") is None


async def test_agent_gone_mid_session_is_a_typed_error(fake: FakeDeployment) -> None:
    async with _provider(fake, connect_timeout=5).session() as sandbox:
        fake.fake.kill_agent("fault")
        with pytest.raises(ConnectionLostError):
            with anyio.fail_after(60):
                await sandbox.exec("echo never")
    assert fake.find("fault") is None


@pytest.mark.parametrize("call", ["exec", "wait"])
async def test_a_frozen_agent_fails_calls_within_the_keepalive_bound(
    fake: FakeDeployment, call: str
) -> None:
    # 0.5 s x 2 keepalives: the bound is 1 s; the slack covers a loaded machine, not a hang.
    bound, slack = 1.0, 20.0
    provider = _provider(fake, keepalive_interval=0.5, keepalive_count_max=2)
    async with provider.session() as sandbox:
        process = await sandbox.start("sleep 60") if call == "wait" else None
        pid = fake.fake.agent_pid("fault")
        os.kill(pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            with pytest.raises(ConnectionLostError), anyio.fail_after(bound + slack):
                if process is not None:
                    await process.wait()
                else:
                    await sandbox.exec("sleep 60")
            assert time.monotonic() - started <= bound + slack
        finally:
            os.kill(pid, signal.SIGCONT)
        # Thawed, the agent answers again: the next call reconnects.
        assert (await sandbox.exec("echo back")).stdout == "back\n"
    assert fake.find("fault") is None


async def test_session_revoked_mid_session_fails_close_loudly(fake: FakeDeployment) -> None:
    sandbox = await _provider(fake).create()
    fake.fake.revoke_sessions()
    with pytest.raises(CleanupError, match="coder delete testuser/fault --yes") as caught:
        await sandbox.close()
    assert isinstance(caught.value.__cause__, CoderNotLoggedInError)
    assert fake.token not in str(caught.value)
    fake.fake.restore_sessions()
    fake.cli("delete", "fault", "--yes")


async def test_owner_slash_name_of_another_user(fake: FakeDeployment) -> None:
    """Attach to a workspace by `owner/name`: lifecycle commands carry that reference."""
    other = fake.fake.add_user("otheruser", roles=["Owner"])
    await anyio.to_thread.run_sync(fake.as_user(other).create_workspace, "theirs", SINGLE)
    async with fake.provider(workspace="otheruser/theirs", on_close="stop").session() as sb:
        assert isinstance(sb, CoderSandbox) and sb.workspace == "otheruser/theirs"
        assert (await sb.exec("echo shared")).stdout == "shared\n"
    assert fake.status("theirs") == "stopped"
    fake.cli("delete", "otheruser/theirs", "--yes")


async def test_workspace_stopped_from_outside_is_not_restarted(fake: FakeDeployment) -> None:
    async with _provider(fake, connect_timeout=10).session() as sandbox:
        await anyio.to_thread.run_sync(lambda: fake.cli("stop", "fault", "--yes"))
        with pytest.raises(ConnectionLostError, match="must be started"):
            with anyio.fail_after(60):
                await sandbox.exec("echo never")
        assert fake.status("fault") == "stopped"  # a reconnect did not quietly start it
    assert fake.find("fault") is None  # on_close="delete" still applied


async def test_windows_agent_is_refused(fake: FakeDeployment) -> None:
    from sandlot.testing import AgentSpec

    fake.fake.add_template("win", agents=[AgentSpec("main", operating_system="windows")])
    with pytest.raises(CoderAgentError, match="runs Windows"):
        await _provider(fake, template="win").create()
    assert fake.find("fault") is None


async def test_a_forward_outlives_a_dropped_connection(fake: FakeDeployment, tmp_path: Path
                                                       ) -> None:

    import httpx

    fake.fake.drop_connection_on("DROP-HERE", times=1)
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "ok.txt").write_text("ok")
    port = listen_port()
    async with _provider(fake).session() as sandbox:
        assert isinstance(sandbox, CoderSandbox)
        await sandbox.copy_in(tmp_path / "site", f"{sandbox.worktree}/site")
        server = await sandbox.start(["python3", "-m", "http.server", "--bind", "127.0.0.1",
                                      str(port)], cwd=f"{sandbox.worktree}/site")
        async with sandbox.forward_port(port) as address:

            async def fetch() -> str:
                async with httpx.AsyncClient() as client:
                    for _ in range(100):
                        try:
                            return (await client.get(f"{address.url}/ok.txt")).text
                        except httpx.TransportError:
                            await anyio.sleep(0.1)
                raise AssertionError("no answer through the forward")

            assert await fetch() == "ok"
            with pytest.raises(ConnectionLostError):
                await sandbox.exec("echo DROP-HERE; sleep 30", timeout=60)
            # The drop ended the server with its SSH session; a new server, the same forward:
            # its new connections go over the new SSH connection.
            server = await sandbox.start(["python3", "-m", "http.server", "--bind",
                                          "127.0.0.1", str(port)],
                                         cwd=f"{sandbox.worktree}/site")
            assert await fetch() == "ok"
            assert sandbox.connection.reconnects == 1
        await server.kill()
    assert fake.find("fault") is None
