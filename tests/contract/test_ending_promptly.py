"""A timeout or `kill()` returns promptly however the command's processes are shaped (issue
35.6: on the fake Coder a 1 s timeout of a daemonizing command or a bounded fork bomb
returned after 6.1 s, the whole grace a backend gives a killed command's output to end).

A process that left the group holds the command's output open, so the backend waits for it
for its grace; the fix ends the marked processes before that wait. To keep the test free of
timing, the graces are raised to a minute here: a wait for them fails the bound by far.
"""

from __future__ import annotations

import uuid
from types import ModuleType

import anyio
import pytest

from sandlot import Sandbox, ssh
from sandlot.backends import local_host
from sandlot.backends.docker import sandbox as docker_sandbox
from tests.helpers import eventually, tagged_processes

pytestmark = pytest.mark.anyio

#: Far below the raised graces, far above what ending the tree takes.
RETURNS_WITHIN = 30.0
GRACE = 60.0

SHAPES = {
    # A daemon of its own session that holds the command's stdout and stderr.
    "daemon holding the output": "setsid sh -c 'sleep 30' & exec sleep 30",
    # 63 shells (depth 5, two children each), one child of each in a session of its own,
    # every one holding the output.
    "bounded fork bomb": (
        "s='d=$1; if [ \"$d\" -gt 0 ]; then sh -c \"$0\" \"$0\" $((d - 1)) & "
        "setsid sh -c \"$0\" \"$0\" $((d - 1)) & fi; exec sleep 30'; sh -c \"$s\" \"$s\" 5"
    ),
}


@pytest.fixture(autouse=True)
def _long_graces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ssh, "KILL_GRACE", GRACE)
    monkeypatch.setattr(docker_sandbox, "DRAIN_AFTER_KILL", GRACE)
    monkeypatch.setattr(local_host, "DRAIN_AFTER_KILL", GRACE)


async def _nothing_left(backend: ModuleType, sandbox: Sandbox, tag: str) -> None:
    async def none() -> bool:
        return not await tagged_processes(backend, sandbox, tag)

    await eventually(none, within=10.0, what="no process of the ended command")


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_a_timeout_returns_promptly(
    backend: ModuleType, sandbox: Sandbox, shape: str
) -> None:
    tag = uuid.uuid4().hex
    with anyio.fail_after(RETURNS_WITHIN):
        result = await sandbox.exec(SHAPES[shape], env={"TEST_TAG": tag}, timeout=1)
    assert result.timed_out
    await _nothing_left(backend, sandbox, tag)


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_kill_returns_promptly(backend: ModuleType, sandbox: Sandbox, shape: str) -> None:
    tag = uuid.uuid4().hex
    process = await sandbox.start(SHAPES[shape], env={"TEST_TAG": tag})
    await anyio.sleep(1)
    with anyio.fail_after(RETURNS_WITHIN):
        await process.kill()
    await _nothing_left(backend, sandbox, tag)
