"""How a docker exec is started and ended: the pid line, the process group, the kill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sandlot._shell import PID_MARKER
from sandlot.backends.docker.sandbox import PidAnnouncement

pytestmark = pytest.mark.anyio

Open = Callable[..., Any]


def test_pid_line_is_stripped_even_when_split_across_chunks() -> None:
    stream = PID_MARKER + b"4242\nreal stderr\nmore"
    for cut in range(1, len(stream)):
        announcement = PidAnnouncement()
        own = announcement.feed(stream[:cut]) + announcement.feed(stream[cut:])
        assert announcement.pid == 4242
        assert own == b"real stderr\nmore"
        assert announcement.client_error is None


def test_client_errors_before_the_pid_line_are_kept_apart() -> None:
    announcement = PidAnnouncement()
    assert announcement.feed(b"Error response from daemon: No such container: x\n") == b""
    assert announcement.feed(b"more") == b""
    assert announcement.pid is None
    assert announcement.pending == b"Error response from daemon: No such container: x\nmore"
    bad_pid = PidAnnouncement()
    assert bad_pid.feed(PID_MARKER + b"12ab\n") == b"" and bad_pid.pid is None


async def test_each_exec_leads_its_own_session_and_group(opened: Open) -> None:
    # The pid the shell announces must be a process-group leader for `kill -KILL -<pid>` to
    # end the whole tree: docker exec (runc) starts each exec process with setsid.
    sandbox = await opened()
    result = await sandbox.exec(["cat", "/proc/self/stat"])
    fields = result.stdout[result.stdout.rfind(")") + 2 :].split()
    pid = int(result.stdout.split()[0])
    pgrp, session = int(fields[2]), int(fields[3])
    assert pid == pgrp == session


async def test_timeout_ends_the_tree_of_a_non_root_user(opened: Open) -> None:
    # The kill runs as root inside the container, whoever the sandbox user is.
    sandbox = await opened(user="sandbox")
    result = await sandbox.exec("sleep 300 & echo $!; id -un >&2; wait", timeout=1.0)
    assert result.timed_out and result.stderr == "sandbox\n"
    child = result.stdout.strip()
    alive = await sandbox.exec(["grep", "-q", "^State:[[:space:]]*[^Z]", f"/proc/{child}/status"])
    assert alive.exit_code != 0, f"pid {child} survived the timeout"
