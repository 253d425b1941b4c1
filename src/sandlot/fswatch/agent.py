"""The watcher that runs INSIDE the sandbox as `python3 -c <this file> ROOT RECURSIVE INTERVAL
FORCE_POLL` (standard library only): inotify through ctypes where the kernel gives it, else
polling the tree. One JSON object per line on stdout: {"k": kind, "p": path, "d": dest, "s":
source}, paths relative to ROOT; `ready` once the watches are set (and which source), then
`created` / `modified` / `deleted` / `moved` / `overflow`. The host ends it (its whole process
tree) when the watch closes; the sandbox's close ends it with every command it started.
"""

# sandlot-fswatch-agent
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import os
import select
import struct
import sys
import time

# Set by main() from the command line (the module is also imported, by tests, without running).
ROOT = "/"
RECURSIVE = True
INTERVAL = 0.5

IN_MODIFY, IN_CLOSE_WRITE, IN_MOVED_FROM, IN_MOVED_TO = 0x2, 0x8, 0x40, 0x80
IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x100, 0x200, 0x400, 0x800
IN_Q_OVERFLOW, IN_IGNORED, IN_ISDIR, IN_ONLYDIR = 0x4000, 0x8000, 0x40000000, 0x1000000
MASK = IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
EVENT = struct.Struct("iIII")


def emit(kind: str, path: str = "", dest: str = "", source: str = "") -> None:
    sys.stdout.write(json.dumps({"k": kind, "p": path, "d": dest, "s": source}) + "\n")


def rel(path: str) -> str:
    return os.path.relpath(path, ROOT)


def inotify() -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    fd = libc.inotify_init1(os.O_CLOEXEC)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "inotify_init1")
    wds: dict[int, str] = {}

    def add(path: str) -> None:
        wd = libc.inotify_add_watch(fd, os.fsencode(path), MASK | IN_ONLYDIR)
        if wd < 0:
            raise OSError(ctypes.get_errno(), "inotify_add_watch " + path)
        wds[wd] = path

    def add_tree(path: str, announce: bool) -> None:
        add(path)
        if not RECURSIVE:
            return
        for base, dirs, files in os.walk(path):
            for name in dirs:
                sub = os.path.join(base, name)
                add(sub)
                if announce:
                    emit("created", rel(sub), source="inotify")
            if announce:
                for name in files:
                    emit("created", rel(os.path.join(base, name)), source="inotify")

    add_tree(ROOT, False)
    emit("ready", source="inotify")
    sys.stdout.flush()
    pending: dict[int, tuple[str, bool]] = {}  # cookie -> (path, is_dir)
    # A write is IN_MODIFY (one per write call) then IN_CLOSE_WRITE: one `modified` for the run
    # of them on one file, even when a read of the queue ends amid it.
    last_modified: str | None = None
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if not ready:
            for cookie, (path, _) in list(pending.items()):
                emit("deleted", path, source="inotify")  # moved out of the tree
                del pending[cookie]
            sys.stdout.flush()
            continue
        data = os.read(fd, 1 << 20)
        at = 0
        while at + EVENT.size <= len(data):
            wd, mask, cookie, size = EVENT.unpack_from(data, at)
            name = data[at + EVENT.size:at + EVENT.size + size].split(b"\0", 1)[0]
            at += EVENT.size + size
            if mask & IN_Q_OVERFLOW:
                emit("overflow", source="inotify")
                continue
            base = wds.get(wd)
            if base is None:
                continue
            if mask & IN_IGNORED:
                wds.pop(wd, None)
                continue
            path = os.path.join(base, os.fsdecode(name)) if name else base
            is_dir = bool(mask & IN_ISDIR)
            if mask & IN_CREATE:
                emit("created", rel(path), source="inotify")
                if is_dir and RECURSIVE:
                    with contextlib.suppress(OSError):
                        add_tree(path, True)
            elif mask & (IN_MODIFY | IN_CLOSE_WRITE):
                if not is_dir and last_modified != path:
                    emit("modified", rel(path), source="inotify")
                last_modified = path
                continue
            elif mask & IN_DELETE:
                emit("deleted", rel(path), source="inotify")
            elif mask & IN_MOVED_FROM:
                pending[cookie] = (rel(path), is_dir)
            elif mask & IN_MOVED_TO:
                source_path = pending.pop(cookie, None)
                if source_path is None:
                    emit("created", rel(path), source="inotify")  # moved in from outside
                    if is_dir and RECURSIVE:
                        with contextlib.suppress(OSError):
                            add_tree(path, True)
                else:
                    emit("moved", source_path[0], rel(path), source="inotify")
                    if is_dir:
                        old = os.path.join(ROOT, source_path[0])
                        for key, value in list(wds.items()):
                            if value == old or value.startswith(old + os.sep):
                                wds[key] = path + value[len(old):]
            last_modified = None
        sys.stdout.flush()


def snapshot() -> dict[str, tuple[int, int, int]]:
    found: dict[str, tuple[int, int, int]] = {}
    for base, dirs, files in os.walk(ROOT):
        for name in dirs + files:
            path = os.path.join(base, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            found[rel(path)] = (st.st_ino, st.st_mtime_ns, st.st_size)
        if not RECURSIVE:
            break
    return found


def poll() -> None:
    before = snapshot()
    emit("ready", source="poll")
    sys.stdout.flush()
    while True:
        time.sleep(INTERVAL)
        now = snapshot()
        gone = {p: v for p, v in before.items() if p not in now}
        by_inode = {v[0]: p for p, v in gone.items()}
        for path in sorted(now):
            if path in before:
                if now[path] != before[path]:
                    emit("modified", path, source="poll")
                continue
            old = by_inode.pop(now[path][0], None)
            if old is not None:
                emit("moved", old, path, source="poll")
                gone.pop(old, None)
            else:
                emit("created", path, source="poll")
        for path in sorted(gone):
            emit("deleted", path, source="poll")
        sys.stdout.flush()
        before = now


def main() -> None:
    global ROOT, RECURSIVE, INTERVAL
    ROOT = os.path.abspath(sys.argv[1])
    RECURSIVE = sys.argv[2] == "1"
    INTERVAL = float(sys.argv[3])
    if not os.path.isdir(ROOT):
        sys.stderr.write("not a directory: " + ROOT + "\n")
        sys.exit(3)
    if sys.argv[4] == "1":
        poll()
    try:
        inotify()
    except OSError:
        poll()


if __name__ == "__main__":
    main()
