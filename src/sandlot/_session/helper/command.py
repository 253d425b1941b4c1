"""Commands run by the session helper, INSIDE the sandbox (adr/0043): `exec` starts one shell
line as `docker exec` would, streams its stdout and stderr, takes its stdin, and reports how
it ended.

Same semantics as one `docker exec` per command: the shell line leads a session (and so a
process group) of its own; the environment is the helper's (the container's, as `docker exec`
gives it) with the command's variables and run mark on top, so the mark is there from the first
instruction; a kill is SIGKILL to the whole group; a process ended by a signal reports 128 +
the signal, as a shell would. The command's output waits in its own pipe until the host has
room for it (flow.py), so a flood costs no memory here or on the host.

Args: {"line": sh line, "env": {...}, "unset": [names], "stdin": bool, "window": bytes,
"start_dir": the directory `docker exec` starts in}.
Control frames: {"pid": n} once started; {"ack": n} per stdin chunk written; {"kill": "eperm"}
when the group belongs to another user (a command run through sudo): the host then kills it
as root. RESULT: {"code": n} once the command exited and its output ended, or {"error": why,
"spawn": true} when it could not start.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Iterable
from typing import IO, Any

from sandlot._process_group import signal_group
from sandlot._session.helper.core import STDERR, STDOUT, Request, op
from sandlot._session.helper.flow import WINDOW, Reader, Writer, control, route_input

#: After a kill, how long the output may take to end before the pipes are abandoned: a
#: process that left the group (and escaped the run mark's sweep) may hold them open.
DRAIN_AFTER_KILL = 2.0



def _start_environment() -> dict[str, str]:
    """The environment the helper's start line had, before python3 ran (bundle.START passes
    `export -p` in SANDLOT_SESSION_ENV): what `docker exec` gives a command. python3's own
    environment may differ: a wrapper (a pyenv shim) prepends to PATH and adds PYENV_*, and
    Python's locale coercion adds LC_CTYPE. Without the snapshot, or one that does not parse,
    the helper's own environment."""
    own = dict(os.environ)
    snapshot = own.pop("SANDLOT_SESSION_ENV", None)
    if snapshot is None:
        return own
    try:
        words = shlex.split(snapshot)
    except ValueError:
        return own
    found: dict[str, str] = {}
    for word in words:
        name, sep, value = word.partition("=")
        if sep and name.isidentifier():
            found[name] = value
    return found or own


#: The environment every command starts from, read once.
BASE_ENV = _start_environment()


def _write_all(stream: IO[bytes]) -> Any:
    def write(data: bytes) -> None:
        view = memoryview(data)
        fd = stream.fileno()
        while view:
            view = view[os.write(fd, view):]

    return write


@op("exec")
def run_command(req: Request) -> dict[str, Any]:
    args = req.args
    env = dict(BASE_ENV)
    for name in args.get("unset", []):
        env.pop(name, None)
    env.update(args.get("env", {}))
    window = int(args.get("window", WINDOW))
    # Where `docker exec` would start it (the line then enters its cwd; the shell's OLDPWD
    # tells where it came from).
    start_dir = str(args.get("start_dir") or "/")
    if not os.path.isdir(start_dir):
        start_dir = "/"
    try:
        proc = subprocess.Popen(
            ["sh", "-c", args["line"]],
            stdin=subprocess.PIPE if args.get("stdin") else subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=start_dir,
            start_new_session=True, close_fds=True,
        )
    except OSError as exc:
        return {"error": f"could not start sh: {exc.strerror or exc}", "spawn": True}
    assert proc.stdout is not None and proc.stderr is not None
    finished = threading.Event()
    killed = threading.Event()

    def kill() -> None:
        if finished.is_set():
            return
        killed.set()
        if proc.returncode is not None:
            # Exited, its output still draining: the group may be gone and its number reused.
            signal_group(proc.pid, reaped=True)
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except PermissionError:
            control(req, kill="eperm")
        except ProcessLookupError:
            pass

    control(req, pid=proc.pid)
    # The descriptors are ours from here (closed once their readers end), not the file
    # objects' (whose close would race the readers).
    readers = {
        STDOUT: Reader(req, os.dup(proc.stdout.fileno()), STDOUT, window),
        STDERR: Reader(req, os.dup(proc.stderr.fileno()), STDERR, window),
    }
    proc.stdout.close()
    proc.stderr.close()
    writer = None
    if proc.stdin is not None:
        stdin = proc.stdin
        writer = Writer(req, _write_all(stdin), stdin.close)
    req.on_cancel(kill)
    router = threading.Thread(target=route_input, args=(req, readers, writer, kill, finished),
                              daemon=True)
    router.start()
    try:
        code = proc.wait()
        _drain(readers.values(), killed)
    finally:
        finished.set()
        for reader in readers.values():
            reader.abandon()
        if writer is not None:
            writer.put(None)  # nobody reads the rest of stdin any more
        for reader in readers.values():
            # A descriptor is closed only once its reader is gone: closed under a reader, its
            # number could be reused by another request's pipe and read from there.
            if reader.done(5.0):
                os.close(reader.fd)
        req.cancel()  # wakes the router, which sees `finished` and ends
    return {"code": 128 - code if code < 0 else code}


def _drain(readers: Iterable[Reader], killed: threading.Event) -> None:
    """Wait for the output to end: for as long as it takes while the command was not killed
    (as `docker exec` does), and DRAIN_AFTER_KILL once it was (a holder that escaped the group
    and the run mark's sweep would hold the pipes open forever)."""
    kill_seen: float | None = None
    for reader in readers:
        while not reader.done(0.2):
            if not killed.is_set():
                continue
            now = time.monotonic()
            if kill_seen is None:
                kill_seen = now
            elif now - kill_seen > DRAIN_AFTER_KILL:
                reader.abandon()
                break
