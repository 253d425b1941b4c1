"""Starting and stopping agent processes so that none is ever a child of a long-lived process.

`spawn` runs a short-lived intermediate process that forks the real agent and exits at once,
printing the agent's pid: whoever spawns (a one-shot `coder` call, or a test process holding the
Python API) reaps only the intermediate, and the agent is re-parented to init. The agent then
detaches into its own session so terminal signals aimed at the test run never reach it, and is
stopped only through `state.terminate`, which checks the recorded start time first so a
recycled pid is never killed.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

from . import bootstrap, state

# Variables a Python interpreter or the agent's commands legitimately need from the host; the
# rest (CODER_SESSION_TOKEN in particular) must not leak into workspace processes.
_KEEP_ENV = ("PATH", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "SYSTEMROOT")


def spawn(root: Path, agent_id: str) -> tuple[int, int | None]:
    """Start the SSH server of one agent; return (pid, start time) of the daemonised process.

    Through the zygote (a fork of a process that has the agent imported) when one runs or can
    be started; else through a fresh interpreter."""
    from . import zygote

    env = {key: os.environ[key] for key in _KEEP_ENV if key in os.environ}
    forked = zygote.spawn(root, agent_id, env)
    if forked is None and zygote.start(root, env):
        forked = zygote.spawn(root, agent_id, env)
    if forked is not None:
        return forked
    proc = subprocess.run(
        bootstrap.agent_command(root, agent_id),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=env,
        close_fds=True,
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip()
        raise RuntimeError(f"fake coder: could not start agent {agent_id}: {detail}")
    pid = int(proc.stdout.decode().strip())
    return pid, state.process_start_time(pid)


def spawn_main() -> None:
    """Entry point of the intermediate process (argv: root, agent id)."""
    root = Path(sys.argv[1])
    agent_id = sys.argv[2]
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    pid = os.fork()
    if pid:
        sys.stdout.write(f"{pid}\n")
        sys.stdout.flush()
        os._exit(0)
    run_agent(root, agent_id)


def run_agent(root: Path, agent_id: str) -> None:
    """In the agent process, just forked: own session, no terminal, output to a log file (the
    spawner's pipe closed at once: the spawner waits for EOF on it), serve, never return."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open(root / "logs" / f"agent-{agent_id}.log",
                  os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(devnull)
    os.close(log)
    code = 0
    try:
        from .agent import serve

        serve(root, agent_id)
    except BaseException as exc:  # the log file is the only witness of a crash
        with contextlib.suppress(Exception):
            import traceback

            traceback.print_exc()
        code = 1 if not isinstance(exc, SystemExit) else int(exc.code or 0)
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
