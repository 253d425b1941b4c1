from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sandlot.testing import AgentSpec

from .support import Coder, make_coder, pid_gone


@pytest.fixture
def coder(tmp_path: Path) -> Iterator[Coder]:
    """A fresh deployment with one template, `docker` (agent `main`, directory `project`)."""
    made = make_coder(tmp_path / "deployment", tmp_path / "bin")
    made.deployment.add_template("docker", agents=[AgentSpec("main", directory="project")])
    try:
        yield made
    finally:
        pids = made.deployment.recorded_agent_pids()
        made.deployment.shutdown()
        assert all(pid_gone(pid) for pid in pids), "agent processes left after shutdown"
