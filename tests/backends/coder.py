"""The coder backend against the fake Coder deployment (sandlot.testing).

A fresh fake deployment per test session, with a one-agent template; every sandbox is a new
workspace (`on_close="delete"`). At the end the deployment is shut down and checked: no
workspace left, no agent process alive.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

import sandlot
from sandlot.testing import AgentSpec, FakeCoderDeployment

# Every exec runs on the same agent host, so one command sees the others' processes.
SHARED_PIDS = True

TEMPLATE = "sandlot-contract"


#: How the session's provider reaches its deployment (for `attach`).
_ACCESS: dict[str, str] = {}


def attach(sandbox: sandlot.Sandbox) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (as another program would attach)."""
    return sandlot.coder(workspace=sandbox.name, on_close="leave", workdir=sandbox.worktree,
                         **_ACCESS)


@asynccontextmanager
async def provider() -> AsyncIterator[sandlot.IsolatedSandboxProvider]:
    with tempfile.TemporaryDirectory(prefix="sandlot-fake-coder-") as tmp:
        fake = FakeCoderDeployment(Path(tmp) / "deployment")
        try:
            fake.add_template(TEMPLATE, agents=[AgentSpec("main", directory="project")])
            exe = fake.install(Path(tmp) / "bin")
            _ACCESS.update(coder_binary=str(exe), coder_url=fake.url, session_token=fake.token)
            yield sandlot.coder(template=TEMPLATE, on_close="delete", **_ACCESS)
            left = [ws["name"] for ws in fake.workspaces()]
            assert not left, f"workspaces left behind by the contract suite: {left}"
        finally:
            await anyio.to_thread.run_sync(fake.shutdown)
        alive = fake.agent_pids()
        assert not alive, f"agent processes still alive after shutdown: {alive}"
