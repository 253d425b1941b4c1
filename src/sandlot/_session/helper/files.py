"""The file tools' operations in the session helper: `tool` runs one safe_helper operation
(the same race-free descriptor walk as `python3 -c safe_helper.py`, with the same arguments,
output and exit codes), its output streamed as DATA frames and its exit code in the RESULT."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import threading
import time
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

    def flush_last(self) -> None:
        """What is left, sent with the RESULT (the request ends now without more output)."""
        self.request.send_last(bytes(self.data), STDOUT)
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


def _inside(root: str, path: str) -> bool:
    """`path` is below `root` and no component below the root is a symlink (READ_MANY's
    `inside`): no link leads the read out of the workspace."""
    rest = path[len(root) + 1:] if path.startswith(root + "/") else None
    if not rest:
        return False
    at = root
    for part in rest.split("/"):
        at = f"{at}/{part}"
        try:
            if stat.S_ISLNK(os.lstat(at).st_mode):
                return False
        except OSError:
            return False
    return True


def _fingerprint(info: os.stat_result) -> str:
    """What changes whenever the file's content can have (within its timestamps' granularity:
    the host gives one back only for a file whose ctime was old when it was read): a write
    moves ctime, which no program can set back (unlike mtime), a replacement the inode."""
    return (f"{info.st_dev}.{info.st_ino}.{info.st_size}.{info.st_mtime_ns}."
            f"{info.st_ctime_ns}")


@op("read_many")
def read_many(request: Request) -> dict[str, Any]:
    """args: {"root", "cap", "paths"}. The output of sandlot.lsp.files.READ_MANY, byte for
    byte (the kept files' 1-based indices, their sizes, then their contents up to the cap),
    without the three processes that script starts on every navigation call. With "known":
    see _read_known."""
    root = str(request.args["root"])
    cap = int(request.args["cap"])
    paths = [str(p) for p in request.args["paths"]]
    known = request.args.get("known")
    sink = Buffered(request)
    kept: list[tuple[int, str]] = []
    for index, path in enumerate(paths, 1):
        if _inside(root, path) and os.path.isfile(path) and os.access(path, os.R_OK):
            kept.append((index, path))
    sink.write((" ".join(str(i) for i, _ in kept) + "\n").encode())
    if not kept:
        sink.flush_last()
        return {"code": 0}
    now = time.time_ns()  # before the stats: a change after them is later than this
    try:
        infos = [os.stat(path) for _, path in kept]
    except OSError:
        sink.flush()
        return {"code": 4}
    sink.write((" ".join(str(i.st_size) for i in infos) + "\n").encode())
    if known is not None:
        return _read_known(sink, kept, infos, known, cap, now)
    total = 0
    for at, (_, path) in enumerate(kept):  # no zip(strict=): the helper runs on python 3.8
        total += infos[at].st_size
        if total > cap:
            continue
        try:  # as cat would: whatever is there now (a changed size breaks the caller's sum)
            with open(path, "rb") as handle:
                while chunk := handle.read(FLUSH_AT):
                    sink.write(chunk)
        except OSError:
            sink.flush()
            return {"code": 1}
    sink.flush_last()
    return {"code": 0}


def _read_known(sink: Buffered, kept: list[tuple[int, str]], infos: list[os.stat_result],
                known: list[Any], cap: int, now: int) -> dict[str, Any]:
    """read_many for a host that holds some of the files' texts: `known` has, per path, null
    or [fingerprint or null, digest] of the text it holds. A file whose fingerprint is the one
    given is not read at all (the host gives one only where a stat proves the file unchanged);
    another is read and hashed, and printed only when its digest is not the one given. After
    the sizes, a line: this clock's time in ns, then per kept file `fingerprint:digest`, the
    digest empty when the file was not read, `-` when past the cap."""
    tokens: list[str] = []
    body: list[bytes] = []
    total = 0
    for at, (index, path) in enumerate(kept):
        held = known[index - 1] if isinstance(known[index - 1], list) else [None, None]
        stamp = _fingerprint(infos[at])
        if held[0] is not None and held[0] == stamp:
            tokens.append(stamp + ":")
            continue
        total += infos[at].st_size
        if total > cap:
            tokens.append(stamp + ":-")
            continue
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except OSError:
            sink.flush()
            return {"code": 1}
        digest = hashlib.sha256(data).hexdigest()
        tokens.append(stamp + ":" + digest)
        if digest != held[1]:
            body.append(data)  # a size other than the stat's breaks the caller's sum
    sink.write((" ".join([str(now), *tokens]) + "\n").encode())
    for data in body:
        sink.write(data)
    sink.flush_last()
    return {"code": 0}
