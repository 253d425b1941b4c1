"""The fake's agent zygote: agents forked from a pre-loaded process behave as agents started
from nothing (detached, own session, the caller's environment filtered), the zygote ends with
the deployment, and an agent still starts when the zygote is gone."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

from sandlot.testing import AgentSpec
from sandlot.testing.fakecoder import zygote

from .support import Coder, make_coder, pid_gone


def _zygote_pid(coder: Coder) -> int:
    record = json.loads((coder.deployment.root / zygote.RECORD_NAME).read_text())
    pid: int = record["pid"]
    return pid


def _stat(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw[raw.rfind(")") + 2:].split()


def test_agents_come_from_the_zygote_detached_and_without_secrets(coder: Coder) -> None:
    coder.create("one")
    coder.wait_ready("one")
    (pid,) = coder.deployment.recorded_agent_pids()
    parent = _zygote_pid(coder)
    assert not pid_gone(parent)
    fields = _stat(pid)
    ppid, session = int(fields[1]), int(fields[3])
    assert ppid not in (parent, os.getpid()), "an agent must not stay a child of its spawner"
    assert session == pid, "an agent runs in a session of its own"
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    assert not any(item.startswith(b"CODER_SESSION_TOKEN=") for item in environ)


def test_an_agent_starts_when_the_zygote_was_killed(coder: Coder) -> None:
    coder.create("first")
    coder.wait_ready("first")
    killed = _zygote_pid(coder)
    os.kill(killed, signal.SIGKILL)  # leaves its socket behind, as a crash would
    coder.create("second")
    coder.wait_ready("second")
    assert _zygote_pid(coder) != killed


def test_shutdown_stops_the_zygote(tmp_path: Path) -> None:
    made = make_coder(tmp_path / "deployment", tmp_path / "bin")
    made.deployment.add_template("docker", agents=[AgentSpec("main")])
    made.create("w")
    made.wait_ready("w")
    parent = _zygote_pid(made)
    made.deployment.shutdown()
    assert pid_gone(parent)
