"""Fixtures of the coder-backend tests.

`deployment`: the Coder deployment for the session -- the fake by default; a real Coder server
with SANDLOT_CODER_DEPLOYMENT=real (tests/realcoder's harness). Every test must leave it as it
found it: `_nothing_left_behind` checks the workspaces and the agent processes after each one.

`fake`: a fresh fake deployment for one fault-injection test (its knobs exist only there).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .deployment import MULTI, PARAMS, PLAIN, SINGLE, Deployment, FakeDeployment

DEPLOYMENT_ENV = "SANDLOT_CODER_DEPLOYMENT"


def _real_deployment(stack: Any) -> Deployment:
    """A real Coder server from tests/realcoder (built by scripts/build-coder.sh)."""
    from tests.realcoder.conftest import require_real_coder  # type: ignore[import-not-found]
    from tests.realcoder.harness import RealCoder  # type: ignore[import-not-found]

    coder = stack.enter_context(RealCoder(require_real_coder()))
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
    )


@pytest.fixture(scope="session")
def deployment() -> Iterator[Deployment]:
    import contextlib

    kind = os.environ.get(DEPLOYMENT_ENV, "fake")
    with contextlib.ExitStack() as stack:
        if kind == "real":
            yield _real_deployment(stack)
            return
        if kind != "fake":
            raise ValueError(f"{DEPLOYMENT_ENV} must be 'fake' or 'real', got {kind!r}")
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="sandlot-coder-")))
        made = FakeDeployment(tmp)
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
