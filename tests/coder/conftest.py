"""Fixtures of the coder-backend tests.

`deployment`: the Coder deployment for the session, parametrized: the fake, then a real Coder
server (tests/realcoder's shared deployment); SANDLOT_CODER_DEPLOYMENT=fake or =real picks one.
Every test must leave it as it found it: `_nothing_left_behind` checks the workspaces and the
agent processes after each one.

`fake`: a fresh fake deployment for one fault-injection test (its knobs exist only there).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from .deployment import MULTI, PARAMS, PLAIN, SINGLE, Deployment, FakeDeployment

DEPLOYMENT_ENV = "SANDLOT_CODER_DEPLOYMENT"
KINDS = ("fake", "real")


def selected_kinds() -> list[str]:
    """Deployments to run on: both by default; SANDLOT_CODER_DEPLOYMENT=fake (or real) for one."""
    raw = os.environ.get(DEPLOYMENT_ENV, "")
    kinds = [k.strip() for k in raw.split(",") if k.strip()] or list(KINDS)
    unknown = sorted(set(kinds) - set(KINDS))
    if unknown:
        raise ValueError(f"{DEPLOYMENT_ENV} takes {', '.join(KINDS)} (comma-separated), "
                         f"got {unknown}")
    return kinds


def _real_deployment() -> Deployment:
    """The session's real Coder server (tests/realcoder/shared.py, built by build-coder.sh)."""
    from tests.realcoder.shared import shared_real_coder

    coder = shared_real_coder()
    env = coder.cli_env()
    return Deployment(
        binary=Path(coder.binary),
        url=coder.url,
        token=coder.session_token,
        username=coder.username,
        templates={
            SINGLE: coder.template_single,
            MULTI: coder.template_multi,
            PLAIN: coder.template_plain,
            PARAMS: coder.template_params,
        },
        config_dir=Path(env["CODER_CONFIG_DIR"]),
        organization=coder.organization,
        template_versions=coder.params_versions,
        kind="real",
    )


@pytest.fixture(scope="session", params=selected_kinds())
def deployment(request: pytest.FixtureRequest) -> Iterator[Deployment]:
    """The same lifecycle tests on the fake and on the real deployment (ids `[fake]`, `[real]`).

    The real one is shared with the rest of the session and stopped at its end.
    """
    if request.param == "real":
        yield _real_deployment()
        return
    with tempfile.TemporaryDirectory(prefix="sandlot-coder-") as tmp:
        made = FakeDeployment(Path(tmp))
        try:
            yield made
        finally:
            made.shutdown()
        assert made.agent_pids() == [], "agent processes alive after the deployment shut down"


def _snapshot(deployment: Deployment) -> dict[str, str]:
    return {ws["name"]: ws["latest_build"]["status"] for ws in deployment.workspaces()}


@pytest.fixture(autouse=True)
def _nothing_left_behind(request: pytest.FixtureRequest) -> Iterator[None]:
    """After each test: the same workspaces in the same states, and no extra agent process."""
    if "deployment" not in request.fixturenames:
        yield
        return
    deployment: Deployment = request.getfixturevalue("deployment")
    before = _snapshot(deployment)
    pids_before = deployment.agent_pids()
    yield
    after = _snapshot(deployment)
    assert after == before, f"workspaces changed: before {before}, after {after}"
    pids_after = deployment.agent_pids()
    if pids_before is not None and pids_after is not None:
        assert sorted(pids_after) == sorted(pids_before), "agent processes left behind"


@pytest.fixture
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeDeployment]:
    """A fresh fake deployment for one test; checked empty and shut down after it."""
    # Short paths: agent sockets live under it (unix socket paths are limited).
    root = Path(tempfile.mkdtemp(prefix="sfc-", dir=tmp_path_factory.getbasetemp()))
    made = FakeDeployment(root)
    try:
        yield made
        left = {ws["name"]: ws["latest_build"]["status"] for ws in made.workspaces()}
        assert all(status == "stopped" for status in left.values()) or not left, (
            f"fault test left workspaces behind: {left}"
        )
    finally:
        made.shutdown()
    assert made.agent_pids() == [], "agent processes alive after the fault test"
