"""A pre-loaded parent for agent processes, so that starting an agent costs a fork.

Starting an agent from nothing means a Python interpreter and an `import asyncssh`: about a
quarter of a second of CPU, per agent. A fan-out of eight workspaces on a two-core machine then
spends most of its time on the fake's own start-up, which says nothing about the code under
test (a real agent is a Go binary already running in its workspace). The zygote imports the
agent once and forks a new agent per request.

Requests come over a unix socket in the deployment's runtime directory: one JSON line
`{"agent": id, "env": {...}}`, answered with the agent's pid. The zygote forks an intermediate
that forks the agent and exits at once, so the agent is re-parented to init like an agent
started by `daemon.spawn`'s subprocess path (which stays the fallback: a spawn never depends on
the zygote being there). The zygote ends on SIGTERM (`stop`, from the deployment's shutdown),
when the deployment is halted or removed, or after `IDLE_EXIT` seconds without a request.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from . import bootstrap, daemon, state

SOCKET_NAME = "zygote.sock"
RECORD_NAME = "zygote.json"
IDLE_EXIT = 300.0
_TICK = 2.0


def _socket_path(root: Path) -> Path:
    return Path(state.load(root)["runtime_dir"]) / SOCKET_NAME


def spawn(root: Path, agent_id: str, env: dict[str, str]) -> tuple[int, int | None] | None:
    """Start agent `agent_id` through the zygote; None when no zygote answers."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(10)
            conn.connect(str(_socket_path(root)))
            conn.sendall(json.dumps({"agent": agent_id, "env": env}).encode() + b"\n")
            answer = conn.makefile("rb").readline()
    except (OSError, state.StateMissingError):
        return None
    try:
        pid = int(answer)
    except ValueError:
        return None
    return pid, state.process_start_time(pid)


def start(root: Path, env: dict[str, str], wait: float = 10.0) -> bool:
    """Start the zygote (detached, like an agent) and wait until it answers; False if not."""
    code = bootstrap.loader_source() + f"from {bootstrap.ALIAS}.zygote import main\nmain()\n"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(root)], stdin=subprocess.DEVNULL,
        capture_output=True, env=env, close_fds=True, check=False, timeout=30,
    )
    if proc.returncode != 0:
        return False
    path = _socket_path(root)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
                return True
            except OSError:
                time.sleep(0.02)
    return False


def stop(root: Path) -> None:
    """End the zygote, if one runs (idempotent)."""
    with contextlib.suppress(OSError, ValueError, KeyError):
        record = json.loads((root / RECORD_NAME).read_text(encoding="utf-8"))
        state.terminate(int(record["pid"]), record.get("start"))
    with contextlib.suppress(OSError, state.StateMissingError):
        _socket_path(root).unlink()


def main() -> None:
    """Entry point of the process `start` runs: fork the zygote and print nothing."""
    root = Path(sys.argv[1])
    if os.fork():
        os._exit(0)
    os.setsid()
    logs = root / "logs"
    logs.mkdir(exist_ok=True)
    devnull = os.open(os.devnull, os.O_RDWR)
    log = os.open(logs / "zygote.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    for target, source in ((0, devnull), (1, log), (2, log)):
        os.dup2(source, target)
    os.close(devnull)
    os.close(log)
    try:
        _serve(root)
    finally:
        with contextlib.suppress(OSError, state.StateMissingError):
            (root / RECORD_NAME).unlink()
        os._exit(0)


def _serve(root: Path) -> None:
    from . import agent  # noqa: F401  (the import every forked agent then shares)

    path = _socket_path(root)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(str(path))
    except OSError:
        # Another zygote holds the path (or a dead one left it): one that answers wins.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            try:
                probe.connect(str(path))
                return
            except OSError:
                path.unlink(missing_ok=True)
                listener.bind(str(path))
    listener.listen(64)
    listener.settimeout(_TICK)
    (root / RECORD_NAME).write_text(
        json.dumps({"pid": os.getpid(), "start": state.process_start_time(os.getpid())}),
        encoding="utf-8",
    )
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    last = time.monotonic()
    while time.monotonic() - last < IDLE_EXIT and _deployment_alive(root):
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        last = time.monotonic()
        with conn:
            conn.settimeout(10)
            with contextlib.suppress(OSError, ValueError, KeyError):
                request = json.loads(conn.makefile("rb").readline())
                pid = _fork_agent(root, listener, conn, str(request["agent"]),
                                  dict(request["env"]))
                conn.sendall(f"{pid}\n".encode())


def _deployment_alive(root: Path) -> bool:
    try:
        return not state.load(root).get("halted")
    except (state.StateMissingError, OSError, ValueError):
        return False


def _fork_agent(root: Path, listener: socket.socket, conn: socket.socket, agent_id: str,
                env: dict[str, str]) -> int:
    """Fork an intermediate that forks the agent; return the agent's pid."""
    read_end, write_end = os.pipe()
    intermediate = os.fork()
    if intermediate == 0:
        os.close(read_end)
        agent = os.fork()
        if agent:
            os.write(write_end, f"{agent}\n".encode())
            os._exit(0)
        os.close(write_end)
        listener.close()
        conn.close()
        _become_agent(root, agent_id, env)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as answer:
        line = answer.readline()
    os.waitpid(intermediate, 0)
    return int(line)


def _become_agent(root: Path, agent_id: str, env: dict[str, str]) -> None:
    """In the forked agent: the environment it was asked for, then what every agent does."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.environ.clear()
    os.environ.update(env)
    daemon.run_agent(root, agent_id)
