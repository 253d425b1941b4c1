"""signal_group ends what is left of a command's group, and never a group that took its
leader's number after the leader was reaped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from sandlot._process_group import signal_group


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _gone_within(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_an_unreaped_leader_takes_its_whole_group_with_it() -> None:
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], stdout=subprocess.PIPE,
                              start_new_session=True)
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    signal_group(leader.pid, reaped=False)
    leader.wait(10)
    assert _gone_within(child)


def test_a_reaped_leaders_group_still_ends_while_a_member_holds_its_number() -> None:
    # The leader exits at once; its child stays in the group, so the number stays taken.
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE,
                              start_new_session=True)
    assert leader.stdout is not None
    child = int(leader.stdout.readline())
    leader.wait(10)
    assert os.getpgid(child) == leader.pid
    signal_group(leader.pid, reaped=True)
    assert _gone_within(child)


def test_a_number_held_by_another_process_is_left_alone() -> None:
    # Stands for a reaped leader whose number a new group leader (a daemon's shim) now has.
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                start_new_session=True)
    try:
        signal_group(stranger.pid, reaped=True)
        time.sleep(0.2)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def test_a_group_that_is_gone_is_not_an_error() -> None:
    leader = subprocess.Popen(["true"], start_new_session=True)
    leader.wait(10)
    signal_group(leader.pid, signal.SIGTERM, reaped=True)
