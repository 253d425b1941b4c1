"""Every fault knob of the fake deployment, seen through the CLI the way a backend sees it."""

from __future__ import annotations

import re

import pytest

from sandlot.testing import AgentSpec

from .support import Coder, pid_gone

pytestmark = pytest.mark.anyio

HEAD = 'Encountered an error running "coder {0}", see "coder {0} --help" for more information'
SHUTTING_DOWN = HEAD.format("ssh") + "\nerror: agent is shutting down\n"


def test_agent_connects_after_n_list_calls(coder: Coder) -> None:
    coder.deployment.set_agent_connects_late(lists=2)
    coder.create("late")
    seen = []
    for _ in range(3):
        (agent,) = coder.agents("late")
        seen.append((agent["status"], agent["lifecycle_state"]))
    assert seen[:2] == [("connecting", "created")] * 2
    assert seen[2][0] == "connected" or coder.wait_ready("late")
    (agent,) = coder.wait_ready("late")
    assert "first_connected_at" in agent


def test_agent_connects_after_a_delay(coder: Coder) -> None:
    coder.deployment.set_agent_connects_late(seconds=600)
    coder.create("slow")
    (ws,) = coder.list_json()
    (agent,) = ws["latest_build"]["resources"][1]["agents"]
    assert (agent["status"], agent["lifecycle_state"]) == ("connecting", "created")
    assert agent["health"] == {"healthy": False, "reason": "agent has not yet connected"}
    assert "first_connected_at" not in agent and "expanded_directory" not in agent
    assert ws["health"] == {"healthy": False, "failing_agents": [agent["id"]]}


@pytest.mark.parametrize(
    ("lifecycle", "health"),
    [
        ("starting", {"healthy": True}),
        ("start_timeout", {"healthy": True}),
        ("start_error", {"healthy": False, "reason": "agent startup script exited with an error"}),
        ("shutting_down", {"healthy": False, "reason": "agent is shutting down"}),
        ("off", {"healthy": False, "reason": "agent is shutting down"}),
    ],
)
def test_forced_lifecycle(coder: Coder, lifecycle: str, health: dict[str, object]) -> None:
    coder.create("cycle")
    coder.wait_ready("cycle")
    coder.deployment.set_lifecycle(lifecycle)
    (agent,) = coder.agents("cycle")
    assert agent["status"] == "connected"
    assert agent["lifecycle_state"] == lifecycle
    assert agent["health"] == health


async def test_ssh_refuses_a_shutting_down_agent_and_warns_on_start_error(coder: Coder) -> None:
    coder.create("state")
    coder.wait_ready("state")
    coder.deployment.set_lifecycle("shutting_down")
    result = coder.run("ssh", "--stdio", "state")
    assert (result.code, result.stdout, result.stderr) == (1, "", SHUTTING_DOWN)
    coder.deployment.set_lifecycle("start_error")
    async with coder.connect("state") as conn:
        assert (await conn.run("echo ok", check=True)).stdout == "ok\n"


def test_ssh_warning_text_on_start_error(coder: Coder) -> None:
    coder.create("warn")
    coder.wait_ready("warn")
    coder.deployment.set_lifecycle("start_error")
    result = coder.run("ssh", "--stdio", "warn", input="")
    assert result.code == 0
    assert "=== ✘ Running workspace agent startup scripts (non-blocking)" in result.stderr
    assert "Warning: A startup script exited with an error" in result.stderr


async def test_prebuild_claim_race(coder: Coder) -> None:
    coder.create("claimed")
    coder.wait_ready("claimed")
    coder.deployment.fail_ssh_with_shutting_down(2)
    for _ in range(2):
        (agent,) = coder.agents("claimed")  # list says all is well ...
        assert (agent["status"], agent["lifecycle_state"]) == ("connected", "ready")
        result = coder.run("ssh", "--stdio", "claimed")  # ... but ssh lands on the old agent
        assert (result.code, result.stderr) == (1, SHUTTING_DOWN)
    async with coder.connect("claimed") as conn:
        assert (await conn.run("echo ready", check=True)).stdout == "ready\n"


def test_create_fails_after_the_workspace_exists(coder: Coder) -> None:
    coder.deployment.fail_create_after_workspace_exists()
    result = coder.run("create", "half", "-t", "docker", "--yes")
    assert result.code == 1
    assert "The half workspace has been created" not in result.stdout
    assert re.fullmatch(
        HEAD.format("create") + r'\nerror: watch build: fetch: Get "https://[^"]+/api/v2/'
        r'workspacebuilds/[0-9a-f-]{36}": net/http: request canceled\n',
        result.stderr,
    )
    (ws,) = coder.list_json()  # ... but the workspace exists, and is running
    assert ws["name"] == "half" and ws["latest_build"]["status"] == "running"
    coder.create("whole")  # only once


def test_failed_start_build(coder: Coder) -> None:
    coder.deployment.fail_next_build("terraform apply: container quota exceeded")
    result = coder.run("create", "broken", "-t", "docker", "--yes")
    assert result.code == 1
    assert result.stderr == (
        HEAD.format("create") + "\nerror: watch build: terraform apply: container quota exceeded\n"
    )
    assert "=== ✘ Starting workspace" in result.stdout
    (ws,) = coder.list_json()
    build = ws["latest_build"]
    assert build["status"] == "failed"
    assert build["job"]["status"] == "failed"
    assert build["job"]["error"] == "terraform apply: container quota exceeded"
    assert build["resources"] == []
    assert coder.deployment.agent_pids() == []
    result = coder.ok("start", "broken", "--yes")  # cleans up with a stop, then starts
    assert result.stdout.startswith("The last start build failed. Cleaning up before retrying...")
    coder.wait_ready("broken")


def test_failed_stop_build(coder: Coder) -> None:
    coder.create("stuck")
    coder.deployment.fail_next_build("stop failed", transition="stop", workspace="stuck")
    result = coder.run("stop", "stuck", "--yes")
    assert (result.code, result.stderr) == (1, HEAD.format("stop") + "\nerror: stop failed\n")
    assert coder.list_json()[0]["latest_build"]["status"] == "failed"
    coder.ok("delete", "stuck", "--yes")


def test_killed_agent_is_disconnected(coder: Coder) -> None:
    coder.create("gone")
    coder.wait_ready("gone")
    pid = coder.deployment.kill_agent("gone")
    assert pid_gone(pid)
    (agent,) = coder.agents("gone")
    assert agent["status"] == "disconnected"
    assert agent["health"] == {"healthy": False, "reason": "agent has lost connection"}
    assert "disconnected_at" in agent


def test_forced_agent_status(coder: Coder) -> None:
    coder.create("tmo")
    coder.deployment.set_agent_status("timeout", workspace="tmo")
    (agent,) = coder.agents("tmo")
    assert agent["status"] == "timeout"
    assert agent["health"]["reason"] == "agent is taking too long to connect"
    coder.deployment.clear_faults()
    coder.wait_ready("tmo")


async def test_blocking_startup_script_is_waited_for(coder: Coder) -> None:
    coder.deployment.add_template(
        "slowboot", agents=[AgentSpec("main", startup_seconds=1.0, startup_blocks_login=True)]
    )
    coder.create("boot", template="slowboot")
    result = coder.run("ssh", "--stdio", "boot", input="")
    assert result.code == 0
    assert "==> ⧗ Running workspace agent startup scripts\n" in result.stderr
    assert "=== ✔ Running workspace agent startup scripts" in result.stderr
    (agent,) = coder.agents("boot")
    assert agent["lifecycle_state"] == "ready"
    assert agent["scripts"][0]["start_blocks_login"] is True
    assert agent["startup_script_behavior"] == "blocking"


def test_shutdown_kills_agents_and_stops_new_ones(coder: Coder) -> None:
    coder.deployment.add_template("duo", agents=["a", "b"])
    coder.create("many", template="duo")
    coder.wait_ready("many")
    pids = coder.deployment.agent_pids()
    assert len(pids) == 2
    coder.deployment.shutdown()
    assert all(pid_gone(pid) for pid in pids)
    assert coder.deployment.agent_pids() == []
    coder.create("after")  # halted: the build completes but no agent process starts
    assert coder.deployment.agent_pids() == []


def test_agents_exit_when_the_deployment_forgets_them(coder: Coder) -> None:
    import shutil
    import time

    coder.create("orphan")
    coder.wait_ready("orphan")
    (pid,) = coder.deployment.agent_pids()
    # A test that removes the directory without shutdown(): the agent must not live on.
    shutil.rmtree(coder.deployment.root / "workspaces")
    (coder.deployment.root / "state.json").rename(coder.deployment.root / "state.moved")
    deadline = time.monotonic() + 30
    while not pid_gone(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    (coder.deployment.root / "state.moved").rename(coder.deployment.root / "state.json")
    assert pid_gone(pid)
