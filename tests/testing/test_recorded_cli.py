"""The fake against the real CLI's recorded outputs (tests/fixtures/coder-cli/, when present).

scripts/record-coder-cli.py records a fixed sequence of calls against a real deployment; the
fake replays the same sequence (recorded.py) and each recorded case becomes one test here. With
no recordings there are no cases. JSON is compared by structure (key order, value types) and by
the enum values a backend branches on; errors and final messages are compared as text.
"""

from __future__ import annotations

from typing import Any

import pytest

from . import recorded

CASES = recorded.recorded_cases()
OLDEST_CASES = recorded.recorded_cases(recorded.OLDEST)


def _username(cases: dict[str, dict[str, Any]]) -> str:
    whoami = (cases.get("whoami-json") or {}).get("stdout_json") or [{}]
    name: str = whoami[0].get("username", "admin")
    return name


@pytest.fixture(scope="module")
def replayed() -> dict[str, dict[str, Any]]:
    return recorded.replay(_username(CASES))


@pytest.fixture(scope="module")
def replayed_oldest() -> dict[str, dict[str, Any]]:
    return recorded.replay(_username(OLDEST_CASES), recorded.OLDEST)


def _agents(ws: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        a["name"]: a
        for r in ws["latest_build"].get("resources") or []
        for a in r.get("agents") or []
    }


def _compare_workspaces(real: list[dict[str, Any]], fake: list[dict[str, Any]]) -> None:
    assert [w["name"] for w in fake] == [w["name"] for w in real]
    for real_ws, fake_ws in zip(real, fake, strict=True):
        assert list(fake_ws) == list(real_ws), "codersdk.Workspace keys"
        real_build, fake_build = real_ws["latest_build"], fake_ws["latest_build"]
        assert list(fake_build) == list(real_build), "codersdk.WorkspaceBuild keys"
        assert list(fake_build["job"]) == list(real_build["job"]), "codersdk.ProvisionerJob keys"
        for key in ("transition", "status"):
            assert fake_build[key] == real_build[key], key
        assert fake_build["job"]["status"] == real_build["job"]["status"]
        real_agents, fake_agents = _agents(real_ws), _agents(fake_ws)
        assert sorted(fake_agents) == sorted(real_agents)
        for name, real_agent in real_agents.items():
            fake_agent = fake_agents[name]
            fake_keys = list(fake_agent)
            if "latency" not in real_agent:
                # `latency` is omitempty and comes with the agent's first stats report, a race
                # the recording shows: in list-multi-agent.json `main` has it, `aux` (connected
                # at the same moment) not yet. The fake always has it once connected; where the
                # real agent had not reported yet, the rest must still match key for key.
                fake_keys = [key for key in fake_keys if key != "latency"]
            assert fake_keys == list(real_agent), f"agent {name} keys"
            assert recorded.shape(fake_agent["health"]) == recorded.shape(real_agent["health"])
            assert recorded.enum_values(fake_agent) == recorded.enum_values(real_agent)
        with_agents = [r for r in real_build["resources"] if r.get("agents")]
        fake_with_agents = [r for r in fake_build["resources"] if r.get("agents")]
        if with_agents and fake_with_agents:
            assert list(fake_with_agents[0]) == list(with_agents[0]), "resource keys"


@pytest.mark.parametrize("name", sorted(CASES))
def test_fake_matches_recording(name: str, replayed: dict[str, dict[str, Any]]) -> None:
    _compare(recorded.normalize_recorded(CASES[name]), replayed[name], name)


@pytest.mark.parametrize("name", sorted(OLDEST_CASES))
def test_fake_as_the_oldest_release_matches_its_recording(
    name: str, replayed_oldest: dict[str, dict[str, Any]]
) -> None:
    """With set_release("v2.27.0"), the fake matches that release's recordings too."""
    _compare(recorded.normalize_recorded(OLDEST_CASES[name]), replayed_oldest[name], name)


def _compare(real: dict[str, Any], fake: dict[str, Any], name: str) -> None:
    assert fake["argv"] == real["argv"]
    assert fake["exit_code"] == real["exit_code"], fake["stderr"]
    if name.startswith("ssh-stdio"):
        assert fake["stdout"].startswith("SSH-2.0-") == real["stdout"].startswith("SSH-2.0-")
        if name.endswith("autostart"):
            assert fake["stderr"].splitlines()[:1] == real["stderr"].splitlines()[:1]
        elif real["exit_code"] != 0:
            assert fake["stderr"] == real["stderr"]
        return
    if real["exit_code"] != 0:
        assert fake["stderr"] == real["stderr"]
        assert fake["stdout"] == real["stdout"]
        return
    real_json, fake_json = real["stdout_json"], fake["stdout_json"]
    if real_json is None:
        assert fake_json is None
        real_lines = [line for line in real["stdout"].splitlines() if line.strip()]
        fake_lines = [line for line in fake["stdout"].splitlines() if line.strip()]
        assert fake_lines[-1:] == real_lines[-1:]
        return
    if name.startswith("list"):
        _compare_workspaces(real_json, fake_json)
    else:
        assert recorded.shape(fake_json) == recorded.shape(real_json)
