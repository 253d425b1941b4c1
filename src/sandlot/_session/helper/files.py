"""The file tools' operations in the session helper: `tool` runs one safe_helper operation
(the same race-free descriptor walk as `python3 -c safe_helper.py`, with the same arguments,
output and exit codes), its output streamed as DATA frames and its exit code in the RESULT."""

from __future__ import annotations

import os
import subprocess
import threading
import traceback
from typing import Any

from sandlot._process_group import signal_group
from sandlot._session.helper import search
from sandlot._session.helper.core import STDOUT, Cancelled, Request, op
from sandlot.tools import safe_helper

#: Output gathered before a DATA frame is sent (a read's page is one frame, not one per line).
FLUSH_AT = 256 << 10
STDERR_TAIL = 16 << 10


class Exited(Exception):
    """The sh script an operation ends in (list, glob) exited with CODE."""

    def __init__(self, code: int, stderr: bytes) -> None:
        super().__init__(code)
        self.code = code
        self.stderr = stderr


class Buffered:
    def __init__(self, request: Request) -> None:
        self.request = request
        self.data = bytearray()

    def write(self, data: bytes) -> None:
        self.data += data
        if len(self.data) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        if self.data:
            self.request.send(bytes(self.data), STDOUT)
            self.data = bytearray()


def _killer(proc: subprocess.Popen[bytes]) -> Any:
    def kill() -> None:
        signal_group(proc.pid, reaped=proc.returncode is not None)

    return kill


@op("tool")
def tool(request: Request) -> dict[str, Any]:
    """args: {"argv": [SCRIPT, OP, ROOT, TARGET, ...]} as safe_helper takes them; input (for
    write) is the request's DATA. Result: {"code": exit code, "stderr": text}."""
    argv = [str(arg) for arg in request.args["argv"]]
    sink = Buffered(request)

    def run_tool(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        # Its own session, so a cancel ends it and whatever it started.
        feed = kwargs.pop("input", None)
        kwargs.pop("capture_output", None)
        kwargs.pop("check", None)
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if feed is not None else
                                subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True, **kwargs)
        request.on_cancel(_killer(proc))
        out, err = proc.communicate(feed)
        return subprocess.CompletedProcess(cmd, proc.returncode, out, err)

    def exec_in(dir_fd: int, cmd: list[str]) -> None:
        # The child's working directory is the open directory itself (/proc/self/fd names the
        # descriptor, not a path that a racing process could redirect).
        sink.flush()
        where = f"/proc/self/fd/{dir_fd}"
        if not os.path.isdir(where):  # no /proc: the child enters it by descriptor itself
            where = "."
        proc = subprocess.Popen(cmd, cwd=where if where != "." else None, pass_fds=(dir_fd,),
                                preexec_fn=(lambda: os.fchdir(dir_fd)) if where == "." else None,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        request.on_cancel(_killer(proc))
        assert proc.stdout is not None and proc.stderr is not None
        errors: list[bytes] = []
        drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()))  # type: ignore[union-attr]
        drain.start()
        while True:
            chunk = proc.stdout.read1(FLUSH_AT)  # type: ignore[attr-defined]
            if not chunk:
                break
            sink.write(chunk)
        drain.join()
        err = b"".join(errors)
        code = proc.wait()
        if code != 0:
            raise Exited(code, err)

    io = safe_helper.IO
    io.out, io.read_input, io.run_tool, io.exec_in = sink.write, request.read_all, run_tool, exec_in
    io.grep_plan = search.plan  # grep without starting rg, where that is exact
    try:
        safe_helper.run(argv)
    except safe_helper.Fail as failure:
        sink.flush()
        return {"code": failure.code, "stderr": failure.detail[-STDERR_TAIL:] + "\n"}
    except Cancelled:
        raise
    except Exited as exited:
        sink.flush()
        return {"code": exited.code,
                "stderr": exited.stderr[-STDERR_TAIL:].decode("utf-8", "replace")}
    except Exception:
        # What an uncaught exception of `python3 -c safe_helper.py` gives: exit 1, traceback.
        sink.flush()
        return {"code": 1, "stderr": traceback.format_exc()[-STDERR_TAIL:]}
    finally:
        io.out = io.read_input = io.run_tool = io.exec_in = io.grep_plan = None
    sink.flush()
    return {"code": 0, "stderr": ""}
