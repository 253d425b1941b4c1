"""The private engine harness itself: it leaves nothing behind, even after a crashed run."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests import docker_engine


def _old_run_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="sdk-", dir="/tmp"))
    (path / "exec").mkdir()
    past = time.time() - 3600
    os.utime(path, (past, past))
    return path


def _wait_until_cmdline_names(pid: int, path: Path) -> None:
    # Popen returns once exec has begun, but the kernel fills /proc/PID/cmdline a moment
    # later: a scan in between sees no holder at all.
    deadline = time.monotonic() + 10
    while str(path).encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, f"process {pid} never showed its arguments"
        time.sleep(0.01)


def test_stale_run_dirs_of_dead_engines_are_reaped() -> None:
    stale = _old_run_dir()
    busy = _old_run_dir()
    # A live process naming the dir (as a running dockerd does) keeps it.
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", f"--data-root={busy}/data"]
    )
    try:
        _wait_until_cmdline_names(holder.pid, busy)
        reaped = docker_engine.reap_stale()
        assert stale in reaped and not stale.exists()
        assert busy not in reaped and busy.exists()
    finally:
        holder.kill()
        holder.wait()
    assert busy in docker_engine.reap_stale()
    assert not busy.exists()


def test_young_run_dirs_are_left_alone() -> None:
    young = Path(tempfile.mkdtemp(prefix="sdk-", dir="/tmp"))
    try:
        assert young not in docker_engine.reap_stale()
        assert young.exists()
    finally:
        young.rmdir()
