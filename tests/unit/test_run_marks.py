"""Run marks: patterns, the host search, and the sh sweep script run for real."""

from __future__ import annotations

import functools
import os
import subprocess
import time

import anyio
import pytest

from sandlot import _proc_scan, _run_marks

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


def _spawn_exec_loop(mark: str) -> subprocess.Popen[bytes]:
    """A marked process that execs itself for ever: at any moment it may be inside execve,
    where /proc shows its environment empty though it keeps the mark."""
    script = 'exec /bin/sh -c "$LOOP"'
    return subprocess.Popen(
        ["/bin/sh", "-c", script],
        env={**os.environ, _run_marks.RUN_ENV: mark, "LOOP": script},
        start_new_session=True,
    )


async def test_host_search_sees_a_process_in_the_middle_of_exec() -> None:
    # Of 2,000 scans, about 140 missed such a process before the search waited out the exec
    # (a cancelled command's daemon survived its sweep that way).
    mark = _run_marks.command_mark(_run_marks.new_sandbox_mark(), 1)
    looping = _spawn_exec_loop(mark)
    try:
        await anyio.sleep(0.1)
        missed = sum(looping.pid not in _run_marks.host_pids(mark) for _ in range(500))
        assert missed == 0, f"{missed} of 500 searches missed a process while it exec'd"
        await _run_marks.host_sweep(mark)
        assert looping.wait(timeout=10) == -9
    finally:
        looping.kill()
        looping.wait()


@pytest.mark.parametrize("shell", [["sh"], ["busybox", "sh"]], ids=["sh", "busybox"])
async def test_sandbox_sweep_kills_a_process_in_the_middle_of_exec(shell: list[str]) -> None:
    # The sandbox sweep with python3 at hand: the sh script alone missed about one sweep in
    # fourteen here.
    sandbox = _run_marks.new_sandbox_mark()
    for number in range(12):
        mark = _run_marks.command_mark(sandbox, number)
        looping = _spawn_exec_loop(mark)
        try:
            await anyio.sleep(0.02)
            with anyio.fail_after(60):
                done = await anyio.run_process(
                    [*shell, *_run_marks.sweep_argv(mark)[1:]], check=False
                )
            assert done.returncode == 0, done.stderr
            try:
                code = await anyio.to_thread.run_sync(functools.partial(looping.wait, 10))
            except subprocess.TimeoutExpired:
                raise AssertionError(f"sweep {number} left the exec loop running") from None
            assert code == -9
        finally:
            looping.kill()
            looping.wait()


def _spawn_without_environment() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["env", "-i", "sleep", "600"], start_new_session=True)


async def test_a_process_without_environment_does_not_hold_a_search() -> None:
    # `env -i` leaves an empty environment for good: the search must not take it for a
    # process in the middle of an exec and wait on it, nor the script give up (exit 1).
    bare = _spawn_without_environment()
    mark = _run_marks.command_mark(_run_marks.new_sandbox_mark(), 1)
    try:
        await anyio.sleep(0.2)
        assert await _run_marks.host_sweep(mark) == 0
        for argv in (_run_marks.sweep_argv(mark),  # python3's search
                     ["busybox", "sh", "-c", _run_marks.SWEEP_SCRIPT, "sh",  # sh's alone
                      _run_marks.grep_pattern(mark)]):
            with anyio.fail_after(60):
                done = await anyio.run_process(argv, check=False)
            assert done.returncode == 0, done.stderr
        assert bare.poll() is None
    finally:
        bare.kill()
        bare.wait()


def test_a_pid_that_no_longer_carries_the_mark_is_not_killed() -> None:
    # What a sweep found may be gone when it kills, its pid given to another process: the
    # kill reads the environment again and spares a process without the mark.
    mark = _run_marks.command_mark(_run_marks.new_sandbox_mark(), 1)
    stranger = subprocess.Popen(["sleep", "30"], env={"PATH": os.environ["PATH"]})
    marked = subprocess.Popen(["sleep", "30"],
                              env={"PATH": os.environ["PATH"], _run_marks.RUN_ENV: mark})
    try:
        def carries(entries: list[bytes]) -> bool:
            return f"{_run_marks.RUN_ENV}={mark}".encode() in entries

        # Until both have finished their execve (the environment reads empty inside it).
        while not all(_proc_scan.read(p.pid, "environ") for p in (stranger, marked)):
            time.sleep(0.005)
        assert _proc_scan.kill_all([stranger.pid, marked.pid], carries) == 1
        assert marked.wait(10) == -9
        assert stranger.poll() is None
    finally:
        stranger.kill()
        marked.kill()
        stranger.wait()
        marked.wait()
