"""The backends the adapter benches run on, as provider configurations (the JSON of
`--provider-config`): a local sandbox and a workspace on a fake Coder deployment
(sandlot.testing), each with the access a second, direct handle needs for the baseline."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import sandlot

#: The fake deployment's template: one agent whose directory is the worktree.
_TEMPLATE = "bench-adapter"


@contextmanager
def local() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(configuration, access): a local sandbox needs no access."""
    yield {"type": "local", "on_close": "delete"}, {}


@contextmanager
def fake_coder() -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(configuration, access) for workspaces on a fake Coder deployment made here; access is
    what attaching a second handle takes (binary, URL, token)."""
    from sandlot.testing import AgentSpec, FakeCoderDeployment

    with tempfile.TemporaryDirectory(prefix="sandlot-bench-adapter-") as tmp:
        fake = FakeCoderDeployment(Path(tmp) / "deployment")
        try:
            fake.add_template(_TEMPLATE, agents=[AgentSpec("main", directory="project")])
            exe = fake.install(Path(tmp) / "bin")
            access = {"coder_binary": str(exe), "coder_url": fake.url,
                      "session_token": fake.token}
            yield {"type": "coder", "template": _TEMPLATE, "on_close": "delete"}, access
        finally:
            fake.shutdown()


def attach(sandbox: sandlot.Sandbox, access: dict[str, Any]) -> sandlot.IsolatedSandboxProvider:
    """A second provider whose sandbox is `sandbox` (the baseline's direct handle)."""
    if sandbox.provider == "local":
        return sandlot.local(attach=sandbox.worktree, on_close="leave")
    return sandlot.coder(workspace=sandbox.name, on_close="leave", workdir=sandbox.worktree,
                         **access)


BACKENDS = {"local": local, "fake-coder": fake_coder}
