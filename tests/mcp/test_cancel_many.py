"""Cancelled MCP `bash` calls leave nothing running (issue 35.8: of 50 calls cancelled over
MCP, 8 left processes alive 8 s later on local), driven by the mcp SDK's own client, whose
abandoned request sends `notifications/cancelled` to the server in memory.

The cancels land at every point of a call: before the server dispatched it, while the
sandbox starts the command, and once it runs. Each command daemonizes a process of its own
too. The test's token is in every process's command line, so the host's /proc finds them all
(bubblewrap's PID namespaces are children of the host's).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator

import anyio
import pytest
from mcp import Client

import sandlot
from sandlot.mcp_server import build_server
from sandlot.tools import Toolbox
from tests.helpers import eventually, host_alive, require_binary

pytestmark = pytest.mark.anyio

CALLS = 50
#: Cancel delays in seconds, cycled: at once, during the start, once it runs.
DELAYS = (0.0, 0.002, 0.005, 0.008, 0.012, 0.015, 0.03, 0.1)


def _carrying(token: str) -> list[int]:
    """Live host processes with `token` in their command line."""
    wanted = token.encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                if wanted in handle.read():
                    found.append(int(name))
        except OSError:
            continue
    return host_alive(found)


@pytest.fixture(params=["local", "local-bwrap"])
async def box(request: pytest.FixtureRequest) -> AsyncIterator[Toolbox]:
    isolation = None
    if request.param == "local-bwrap":
        require_binary("bwrap", "apt-get install bubblewrap")
        isolation = "bwrap"
    async with sandlot.local(isolation=isolation).session() as sandbox, \
            Toolbox(sandbox) as made:
        yield made


async def test_cancelled_bash_calls_leave_no_process(box: Toolbox) -> None:
    token = f"tok{uuid.uuid4().hex}"
    # `sh -c 'sleep 30' <token>` carries the token as $0, so every process shows it.
    command = f"setsid sh -c 'sleep 30' {token} & exec sh -c 'sleep 30' {token}"
    async with Client(build_server(box)) as client:
        for n in range(CALLS):
            with anyio.move_on_after(DELAYS[n % len(DELAYS)]):
                await client.call_tool("bash", {"command": command})
        # The server stays usable after the cancels.
        after = await client.call_tool("bash", {"command": "echo still-serving"})
        assert not after.is_error
    left: list[int] = []

    def none_left() -> bool:
        nonlocal left
        left = _carrying(token)
        return not left

    try:
        await eventually(none_left, within=8.0, what="no process of a cancelled call")
    except AssertionError:
        raise AssertionError(f"{len(left)} processes of {CALLS} cancelled calls run: "
                             f"{[_describe(pid) for pid in left]}") from None


def _describe(pid: int) -> str:
    """What a leftover is (its state, parent, session and run mark), for the failure."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            argv = handle.read().replace(b"\0", b" ").decode(errors="replace")
        with open(f"/proc/{pid}/environ", "rb") as handle:
            entries = handle.read().split(b"\0")
        marks = [e.decode() for e in entries if e.startswith(b"SANDLOT_RUN=")]
    except OSError as exc:
        return f"{pid}: {exc}"
    return f"{pid} state={fields[0]} ppid={fields[1]} sid={fields[3]} {marks} {argv!r}"

