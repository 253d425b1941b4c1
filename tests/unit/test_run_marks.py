"""Run marks: patterns, the host search, and the sh sweep script run for real."""

from __future__ import annotations

import os
import subprocess

import anyio
import pytest

from sandlot import _run_marks

pytestmark = pytest.mark.anyio


def _spawn_marked(mark: str) -> subprocess.Popen[bytes]:
    # A session of its own: it left our group, as an escaping daemon would.
    return subprocess.Popen(
        ["sleep", "600"], env={**os.environ, _run_marks.RUN_ENV: mark}, start_new_session=True
    )


def test_patterns() -> None:
    sandbox = _run_marks.new_sandbox_mark()
    assert len(sandbox) == 12
    command = _run_marks.command_mark(sandbox, 7)
    assert _run_marks.grep_pattern(command) == f"^SANDLOT_RUN={sandbox}-7$"
    assert _run_marks.grep_pattern(sandbox) == f"^SANDLOT_RUN={sandbox}-[0-9]+$"
    for bad in ("", "x; rm -rf /", "abc", f"{sandbox}-1-2", f"{sandbox}\n"):
        with pytest.raises(ValueError):
            _run_marks.grep_pattern(bad)


async def test_host_sweep_kills_exact_command_and_not_its_neighbour() -> None:
    sandbox = _run_marks.new_sandbox_mark()
    target = _spawn_marked(_run_marks.command_mark(sandbox, 1))
    neighbour = _spawn_marked(_run_marks.command_mark(sandbox, 11))  # a prefix of "1" is not "1"
    try:
        await anyio.sleep(0.2)  # the children have exec'd sleep with the environment
        assert target.pid in _run_marks.host_pids(_run_marks.command_mark(sandbox, 1))
        killed = await _run_marks.host_sweep(_run_marks.command_mark(sandbox, 1))
        assert killed >= 1
        assert target.wait(timeout=10) == -9
        assert neighbour.poll() is None
        # The sandbox mark finds every command of the sandbox.
        await _run_marks.host_sweep(sandbox)
        assert neighbour.wait(timeout=10) == -9
    finally:
        for proc in (target, neighbour):
            proc.kill()
            proc.wait()


async def test_sweep_script_under_busybox_sh() -> None:
    sandbox = _run_marks.new_sandbox_mark()
    marked = _spawn_marked(_run_marks.command_mark(sandbox, 3))
    try:
        await anyio.sleep(0.2)
        with anyio.fail_after(60):
            done = await anyio.run_process(
                ["busybox", "sh", "-c", _run_marks.SWEEP_SCRIPT, "sh",
                 _run_marks.grep_pattern(sandbox)],
                check=False,
            )
        assert done.returncode == 0, done.stderr
        assert marked.wait(timeout=10) == -9
    finally:
        marked.kill()
        marked.wait()
