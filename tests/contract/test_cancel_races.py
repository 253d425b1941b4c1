"""A cancel ends a command's whole tree whenever it lands, even in the few milliseconds while
the backend is still starting the command (issue 35.6: 60 execs cancelled 0-15 ms after they
began left 12 processes running until close).

A cancel at 0 ms lands in the backend's start itself (asyncio's create_subprocess_exec kills
only the direct child when cancelled there); the later ones land just after it. Leftovers are
found by the test's own environment tag, inside the sandbox where one exec sees another's
processes, else on the host (bubblewrap's PID namespaces are children of the host's).
"""

from __future__ import annotations

import time
import uuid
from types import ModuleType

import anyio
import pytest

from sandlot import Sandbox
from tests.helpers import eventually, tagged_processes

pytestmark = pytest.mark.anyio

CALLS = 24
#: Cancel delays in seconds, cycled: at once, then across the first milliseconds of the start.
DELAYS = (0.0, 0.003, 0.007, 0.015)

SHAPES = (
    "sleep 30",
    # A daemon of its own session, beside the command's own child.
    "setsid sh -c 'sleep 30' & sleep 30",
)

async def test_a_cancel_while_the_command_starts_leaves_nothing(
    backend: ModuleType, sandbox: Sandbox
) -> None:
    tag = uuid.uuid4().hex
    for n in range(CALLS):
        with anyio.move_on_after(DELAYS[n % len(DELAYS)]):
            await sandbox.exec(SHAPES[n % len(SHAPES)], env={"TEST_TAG": tag})
    # Each cancel returned only after ending its tree; the short wait is for the kernel to
    # finish tearing down a PID namespace whose init was killed (bubblewrap).
    left: list[int] = []

    async def none_left() -> bool:
        nonlocal left
        left = await tagged_processes(backend, sandbox, tag)
        return not left

    try:
        await eventually(none_left, within=5.0, what="no process of a cancelled exec")
    except AssertionError:
        raise AssertionError(
            f"{len(left)} processes of {CALLS} cancelled execs still run: {left}"
        ) from None


async def test_a_cancel_while_the_command_starts_returns_promptly(
    sandbox: Sandbox,
) -> None:
    """Finishing the start before ending the command does not hold a cancel back."""
    began = time.monotonic()
    with anyio.move_on_after(0):
        await sandbox.exec("sleep 30")
    assert time.monotonic() - began < 20.0
