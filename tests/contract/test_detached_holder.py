"""A process that leaves the command's process group and keeps its stdout open must not make
timeout, kill() or wait() hang: the call returns once the command itself is gone."""

from __future__ import annotations

import anyio
import pytest

from sandlot import Sandbox

pytestmark = pytest.mark.anyio

#: Generous: the bound is "returns", not a benchmark (kill drains the pipes for a few seconds).
RETURNS_WITHIN = 45.0

# The escaped process records its pid so the test can end it afterwards.
HOLDER = "setsid sh -c 'echo $$ > {pid}; exec sleep 600' & sleep 100"


# The kill has usually ended the holder already (it carries the run mark), and its pid may be
# another process's by now: only a process that is still `sleep 600` is ended.
END_HOLDER = """p=$(cat "$1" 2>/dev/null) &&
[ "$(tr '\\0' ' ' < /proc/$p/cmdline 2>/dev/null)" = 'sleep 600 ' ] && kill -9 "$p"
rm -f "$1"
"""


async def _end_holder(sandbox: Sandbox, pid_file: str) -> None:
    await sandbox.exec(["sh", "-c", END_HOLDER, "sh", pid_file])


async def test_timeout_returns_while_a_detached_process_holds_stdout(
    sandbox: Sandbox, workdir: str
) -> None:
    pid_file = f"{workdir}/holder-exec.pid"
    try:
        with anyio.fail_after(RETURNS_WITHIN):
            result = await sandbox.exec(HOLDER.format(pid=pid_file), cwd=workdir, timeout=1)
        assert result.timed_out
    finally:
        await _end_holder(sandbox, pid_file)


async def test_kill_returns_while_a_detached_process_holds_stdout(
    sandbox: Sandbox, workdir: str
) -> None:
    pid_file = f"{workdir}/holder-kill.pid"
    try:
        running = await sandbox.start(HOLDER.format(pid=pid_file), cwd=workdir)
        await anyio.sleep(0.5)
        with anyio.fail_after(RETURNS_WITHIN):
            await running.kill()
            await running.wait()
        with anyio.fail_after(RETURNS_WITHIN):
            timed = await sandbox.start(HOLDER.format(pid=pid_file), cwd=workdir, timeout=1)
            assert (await timed.wait()).timed_out
    finally:
        await _end_holder(sandbox, pid_file)
