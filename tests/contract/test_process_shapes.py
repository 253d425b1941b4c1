"""Nothing a command started survives its timeout, an outside cancel, `kill()` or `close()`,
whatever shape its process tree has: ten shapes, among them processes that leave the command's
process group or session (setsid, double forks, set -m jobs), on every backend.

Each long-lived process of a shape writes its pid to a file in the worktree; after the action
the test checks those pids (a zombie counts as ended: it runs nothing). Under bubblewrap the
pids are those of a namespace that is gone, so there the host is searched instead for processes
carrying the test's own environment tag.
"""

from __future__ import annotations

import uuid
from types import ModuleType

import anyio
import pytest

from sandlot import IsolatedSandboxProvider, Sandbox
from tests.helpers import host_alive, host_tagged

pytestmark = pytest.mark.anyio

#: Generous: "returns", not a benchmark.
RETURNS_WITHIN = 60.0

# A long-lived process that records its own pid.
_LIVE = "sh -c 'echo $$ >> \"$PIDS\"; exec sleep 600'"

#: name -> (shell line, how many pids it records). `$PIDS` is the pid file.
SHAPES: dict[str, tuple[str, int]] = {
    "plain": ('echo $$ >> "$PIDS"; exec sleep 600', 1),
    "background child": (f"{_LIVE} & wait", 1),
    # Where the image has no nohup (busybox builds without it), the same thing by hand.
    "nohup": (
        f"if command -v nohup >/dev/null; then nohup {_LIVE} >/dev/null 2>&1 & "
        f"else ( trap '' HUP; exec {_LIVE} ) >/dev/null 2>&1 & fi; wait",
        1,
    ),
    "double fork": (f"( {_LIVE} & ); exec sleep 600", 1),
    "trap TERM": ("trap '' TERM; echo $$ >> \"$PIDS\"; while :; do sleep 1; done", 1),
    "setsid holding stdout": (f"setsid {_LIVE} & exec sleep 600", 1),
    "setsid -f": (
        f"if setsid -f true 2>/dev/null; then setsid -f {_LIVE}; else setsid {_LIVE} & fi; "
        "exec sleep 600",
        1,
    ),
    "daemonizing script": (
        f"sh -c '( setsid {_LIVE.replace(chr(39), chr(34))} </dev/null >/dev/null 2>&1 & ) &'; "
        "exec sleep 600",
        1,
    ),
    "set -m job": (f"set -m; {_LIVE} & exec sleep 600", 1),
    "setpgid": (f"( set -m; {_LIVE} & wait ) & exec sleep 600", 1),
}


def _line(shape: str) -> str:
    return SHAPES[shape][0]


async def _recorded(sandbox: Sandbox, pid_file: str, count: int) -> list[int]:
    """Wait until the shape's processes recorded their pids; return them."""
    with anyio.fail_after(RETURNS_WITHIN):
        while True:
            got = await sandbox.exec(["sh", "-c", 'cat "$1" 2>/dev/null', "sh", pid_file])
            pids = [int(x) for x in got.stdout.split()]
            if len(pids) >= count:
                return pids
            await anyio.sleep(0.1)


_ALIVE_SCRIPT = (
    'for p in "$@"; do s=$(sed "s/.*) //" /proc/$p/stat 2>/dev/null | cut -d" " -f1); '
    '[ -n "$s" ] && [ "$s" != Z ] && echo $p; done; true'
)


async def _survivors(
    backend: ModuleType, sandbox: Sandbox | None, pids: list[int], tag: str
) -> list[int]:
    """Which of the shape's processes still run."""
    if not backend.SHARED_PIDS:  # bwrap: the recorded pids are namespaced
        return host_tagged(tag)
    if sandbox is None or sandbox.closed:  # after close: host-visible backends only
        return host_alive(pids) + host_tagged(tag)
    got = await sandbox.exec(["sh", "-c", _ALIVE_SCRIPT, "sh", *map(str, pids)], check=True)
    return [int(x) for x in got.stdout.split()]


def _env(pid_file: str, tag: str) -> dict[str, str]:
    return {"PIDS": pid_file, "TEST_TAG": tag}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_timeout_ends_every_process(
    backend: ModuleType, sandbox: Sandbox, workdir: str, shape: str
) -> None:
    tag = uuid.uuid4().hex
    pid_file = f"{workdir}/{tag}.pids"
    with anyio.fail_after(RETURNS_WITHIN):
        result = await sandbox.exec(_line(shape), env=_env(pid_file, tag), timeout=1.5)
    assert result.timed_out
    pids = await _recorded(sandbox, pid_file, SHAPES[shape][1])
    assert await _survivors(backend, sandbox, pids, tag) == []


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_outside_cancel_ends_every_process(
    backend: ModuleType, sandbox: Sandbox, workdir: str, shape: str
) -> None:
    tag = uuid.uuid4().hex
    pid_file = f"{workdir}/{tag}.pids"
    with anyio.fail_after(2 * RETURNS_WITHIN):  # the cancel, too, must return
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: sandbox.exec(_line(shape), env=_env(pid_file, tag)))
            pids = await _recorded(sandbox, pid_file, SHAPES[shape][1])
            group.cancel_scope.cancel()
    assert await _survivors(backend, sandbox, pids, tag) == []


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_kill_ends_every_process(
    backend: ModuleType, sandbox: Sandbox, workdir: str, shape: str
) -> None:
    tag = uuid.uuid4().hex
    pid_file = f"{workdir}/{tag}.pids"
    process = await sandbox.start(_line(shape), env=_env(pid_file, tag))
    pids = await _recorded(sandbox, pid_file, SHAPES[shape][1])
    with anyio.fail_after(RETURNS_WITHIN):
        await process.kill()
    assert await _survivors(backend, sandbox, pids, tag) == []


async def test_close_ends_every_process_of_every_shape(
    backend: ModuleType, provider: IsolatedSandboxProvider
) -> None:
    tag = uuid.uuid4().hex
    recorded: list[int] = []
    async with provider.session() as fresh:
        pid_file = f"{fresh.worktree}/{tag}.pids"
        for shape in SHAPES:
            await fresh.start(_line(shape), env=_env(pid_file, tag))
        recorded = await _recorded(fresh, pid_file, sum(n for _, n in SHAPES.values()))
        with anyio.fail_after(RETURNS_WITHIN):
            await fresh.close()
    if backend.NAME.startswith("docker"):
        return  # the container is removed with every process in it
    assert await _survivors(backend, None, recorded, tag) == []
