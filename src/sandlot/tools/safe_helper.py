"""The race-free half of the file tools, run INSIDE the sandbox as `python3 -c <this file>`.

The sh scripts (scripts.py) resolve a path, then act on it by name: between the two, a process
in the sandbox can swap a directory for a symlink that leads out of the workspace. Here the
check and the use are one step: the workspace root is opened once, and every path is walked
from that descriptor one component at a time with O_NOFOLLOW; a symlink met on the way is read
and followed by hand, and refused if it leads above the root. Files are opened, created (temp
file, then rename) and listed through descriptors of directories already inside the root, so
what a racing process does to names cannot redirect them. Searches hand the opened files to
rg / grep as /dev/fd/N.

Usage (by the toolbox): python3 -c SOURCE SCRIPT OP ROOT TARGET [ARGS...], with the arguments
of the sh SCRIPT it replaces; the output and the exit codes are exactly that script's, so the
toolbox parses both alike. This
file only uses the standard library, and is self-contained: it is sent as a string.

The session helper (sandlot/_session/helper/files.py) runs the same operations many at a time
in one long-lived process: `run(argv)` there, with `IO` (a thread-local) redirecting output,
input, the commands run for an operation and the sh script exec'd by list/glob. Nothing here
changes the process's working directory in that case: directories are used by descriptor.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Callable

ROOT_MISSING, UNRESOLVABLE, ESCAPES, NOT_A_DIRECTORY, NOT_FOUND = 70, 71, 72, 73, 74
IS_A_DIRECTORY, NOT_A_FILE, BINARY, EXISTS_NOT_READ, CHANGED = 75, 76, 79, 80, 81
MKDIR_FAILED, WRITE_FAILED, TOO_LARGE, BAD_PATTERN, PERMISSION_DENIED = 82, 83, 84, 85, 86
MAX_HOPS = 40
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Fail(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


#: Per-thread redirections set by the session helper (unset: this process's own stdio).
IO = threading.local()


def out(data: bytes) -> None:
    sink = getattr(IO, "out", None)
    if sink is None:
        sys.stdout.buffer.write(data)
    else:
        sink(data)


def read_input() -> bytes:
    source = getattr(IO, "read_input", None)
    return sys.stdin.buffer.read() if source is None else source()


def run_tool(argv: list[str], **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    """subprocess.run (the session helper's version can be ended when its request is)."""
    runner = getattr(IO, "run_tool", None)
    if runner is None:
        return subprocess.run(argv, **kwargs)  # type: ignore[call-overload, no-any-return]
    return runner(argv, **kwargs)  # type: ignore[no-any-return]


def exec_in(dir_fd: int, argv: list[str]) -> None:
    """Run argv in the directory DIR_FD as this operation's end: here by fchdir and exec (the
    operation's output and exit code are the script's); the session helper runs it as a child
    whose working directory is that descriptor."""
    runner = getattr(IO, "exec_in", None)
    if runner is not None:
        runner(dir_fd, argv)
        return
    os.fchdir(dir_fd)
    os.execvp(argv[0], argv)


class Walk:
    """A path walked from the root descriptor: `parent` is the open directory holding `name`."""

    def __init__(self, root: str) -> None:
        try:
            self.root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            raise Fail(ROOT_MISSING, root) from None
        self.root = os.path.normpath(root)
        self.root_real = os.path.realpath(root)

    def relative(self, target: str) -> list[str]:
        """TARGET (absolute, lexically inside the root) as components below the root."""
        for base in (self.root, self.root_real):
            base = base.rstrip("/")
            if target == base:
                return []
            if target.startswith(base + "/"):
                return target[len(base) + 1:].split("/")
        raise Fail(ESCAPES, target)

    def resolve(self, target: str, create_dirs: bool = False) -> tuple[int, str | None]:
        """(parent fd, final name), or (the directory's fd, None) when the path names a
        directory through `.`/`..`. A symlink anywhere, the last component included, is
        followed by hand. Intermediate directories are created when `create_dirs` (mkdir
        through the parent descriptor)."""
        parts = self.relative(target)
        stack = [os.dup(self.root_fd)]
        hops = 0
        try:
            while parts:
                name = parts.pop(0)
                if name in ("", ".", ".."):
                    if name == "..":
                        if len(stack) == 1:
                            raise Fail(ESCAPES, target)
                        os.close(stack.pop())
                    continue
                link = self._link(stack[-1], name)
                if link is not None:
                    hops += 1
                    if hops > MAX_HOPS:
                        raise Fail(UNRESOLVABLE, name)
                    parts[:0] = self._follow(stack, link, target)
                    continue
                if not parts:
                    return stack.pop(), name
                try:
                    fd = os.open(name, DIR_FLAGS, dir_fd=stack[-1])
                except OSError as exc:
                    if self._link(stack[-1], name) is not None:
                        parts.insert(0, name)  # it became a link meanwhile: follow it
                        continue
                    if exc.errno == errno.ENOENT and create_dirs and ".." not in parts:
                        try:
                            os.mkdir(name, 0o777, dir_fd=stack[-1])
                        except FileExistsError:
                            pass
                        except OSError:
                            raise Fail(MKDIR_FAILED, target) from None
                        parts.insert(0, name)
                        continue
                    if exc.errno == errno.ENOENT and ".." in parts:
                        raise Fail(ESCAPES, target) from None  # as the sh resolver decides
                    if exc.errno == errno.ENOENT:
                        raise Fail(NOT_FOUND, target) from None
                    if exc.errno == errno.ENOTDIR:
                        raise Fail(NOT_A_DIRECTORY, target) from None
                    raise Fail(UNRESOLVABLE, name) from None
                stack.append(fd)
            return stack.pop(), None
        finally:
            for fd in stack:
                os.close(fd)

    @staticmethod
    def _link(dir_fd: int, name: str) -> str | None:
        try:
            return os.readlink(name, dir_fd=dir_fd)
        except OSError:
            return None

    def _follow(self, stack: list[int], link: str, target: str) -> list[str]:
        """A link's components; an absolute one restarts at the root (it must lead inside)."""
        if link.startswith("/"):
            real = self.root_real.rstrip("/")
            if link != real and not link.startswith(real + "/"):
                raise Fail(ESCAPES, link)
            while len(stack) > 1:
                os.close(stack.pop())
            return link[len(real):].split("/")
        return link.split("/")


def open_file(walk: Walk, target: str) -> int:
    parent, name = walk.resolve(target)
    try:
        if name is None or name == ".":
            raise Fail(IS_A_DIRECTORY, target)
        opened = open_regular(parent, name, target)
    finally:
        os.close(parent)
    if opened is None:
        raise Fail(NOT_FOUND, target)
    return opened[0]


def open_regular(parent: int, name: str, target: str) -> tuple[int, os.stat_result] | None:
    """NAME in the directory PARENT, opened for reading without following a symlink: its
    descriptor (blocking) and stat, or None when it does not exist. A directory, a symlink
    (swapped in since resolve: refused, not followed) or anything but a regular file fails."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                     dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise Fail(IS_A_DIRECTORY, target) from None
        if exc.errno == errno.ELOOP:
            raise Fail(ESCAPES, target) from None
        if exc.errno == errno.EACCES:
            raise Fail(PERMISSION_DENIED, target) from None
        raise Fail(NOT_A_FILE, target) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise Fail(IS_A_DIRECTORY if stat.S_ISDIR(info.st_mode) else NOT_A_FILE, target)
    os.set_blocking(fd, True)
    return fd, info


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:8192]


def digest(data: bytes) -> str:
    return hashlib.md5(data).hexdigest() + "  -"


def op_read(walk: Walk, target: str, first_s: str, count_s: str, cap_s: str) -> None:
    """Streams the file once: size and line count of the whole, the page kept up to `cap`."""
    fd = open_file(walk, target)
    first, count, cap = int(first_s), int(count_s), int(cap_s)
    if is_binary(os.pread(fd, 8192, 0)):
        raise Fail(BINARY, str(os.fstat(fd).st_size))
    size = newlines = 0
    line = 1  # the line the next byte belongs to
    page = bytearray()
    last = b""
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        size += len(chunk)
        last = chunk[-1:]
        if len(page) < cap and line < first + count:
            pos = 0
            while pos < len(chunk) and line < first + count and len(page) < cap:
                end = chunk.find(b"\n", pos)
                stop = len(chunk) if end < 0 else end + 1
                if line >= first:
                    page += chunk[pos:stop]
                if end >= 0:
                    line += 1
                pos = stop
        newlines += chunk.count(b"\n")
    os.close(fd)
    lines = newlines + (1 if size and last != b"\n" else 0)
    out(b"%d %d\n" % (size, lines))
    out(bytes(page[:cap]))


def op_slurp(walk: Walk, target: str, cap: str) -> None:
    fd = open_file(walk, target)
    info = os.fstat(fd)
    if info.st_size > int(cap):
        raise Fail(TOO_LARGE, str(info.st_size))
    data = read_all(fd)
    os.close(fd)
    if is_binary(data):
        raise Fail(BINARY, str(len(data)))
    out(digest(data).encode() + b"\n" + data)


def op_fetch(walk: Walk, target: str, cap: str) -> None:
    """The file's raw bytes, binary or not; a file nobody may read (no r bit) is refused even
    to root."""
    try:
        fd = open_file(walk, target)
    except PermissionError:
        raise Fail(PERMISSION_DENIED, target) from None
    info = os.fstat(fd)
    if not info.st_mode & 0o444:
        os.close(fd)
        raise Fail(PERMISSION_DENIED, target)
    if info.st_size > int(cap):
        os.close(fd)
        raise Fail(TOO_LARGE, str(info.st_size))
    data = read_all(fd)
    os.close(fd)
    out(data)


def op_list(walk: Walk, target: str, shallow: str, limit: str) -> None:
    """list: the listing script, run in the directory entered race-free."""
    fd = open_directory(walk, target)
    try:
        exec_in(fd, ["sh", "-c", script(), "sandlot-list", ".", ".", shallow, limit])
    finally:
        os.close(fd)


def op_write(walk: Walk, target: str, mode: str, expected: str, token: str) -> None:
    data = read_input()
    existed = write_data(walk, target, mode, expected, token, data)
    out(b"%d %d\n" % (1 if existed else 0, len(data)))


def op_write_many(walk: Walk, target: str, token: str) -> None:
    """Many files in one call. Stdin: a tar whose first members are `paths` (one absolute
    target per line, lexically inside the root) and `modes` (octal per line, or "-" to keep an
    existing file's), then the data of file i as member `i`. Prints one exit code per file, in
    order (0: written), and goes on after a refused file. `target` is unused (the root)."""
    import io
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(read_input()), mode="r|") as tar:
        paths: list[str] = []
        modes: list[str] = []
        for member in tar:
            handle = tar.extractfile(member)
            data = handle.read() if handle is not None else b""
            if member.name == "paths":
                paths = [os.fsdecode(line) for line in data.split(b"\n")[:-1]]
            elif member.name == "modes":
                modes = data.decode().split()
            else:
                index = int(member.name)
                try:
                    write_data(walk, paths[index], "any", "", f"{token}.{index}", data,
                               None if modes[index] == "-" else int(modes[index], 8))
                    out(b"0\n")
                except Fail as failure:
                    out(b"%d\n" % failure.code)


def write_data(walk: Walk, target: str, mode: str, expected: str, token: str,
               data: bytes, file_mode: int | None = None) -> bool:
    """Write `data` at `target` (temp file, then rename), with `file_mode` if given (set on
    the temp file, before it has the name); whether the file existed."""
    parent, name = walk.resolve(target, create_dirs=True)
    tmp = f".sandlot-write.{token}.tmp"
    try:
        if name is None or name == ".":
            raise Fail(IS_A_DIRECTORY, target)
        existed = False
        keep_mode = None
        opened = open_regular(parent, name, target)
        if opened is not None:
            fd, info = opened
            existed = True
            keep_mode = stat.S_IMODE(info.st_mode)
            if mode != "any":
                os.close(fd)
                raise Fail(EXISTS_NOT_READ, target)
            if expected:
                current = read_all(fd)
                if digest(current) != expected:
                    os.close(fd)
                    raise Fail(CHANGED, target)
            os.close(fd)
        try:
            wfd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                          | os.O_CLOEXEC, 0o666, dir_fd=parent)
        except OSError:
            raise Fail(WRITE_FAILED, target) from None
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(wfd, view):]
            if file_mode is not None:
                os.fchmod(wfd, file_mode)
            elif keep_mode is not None:
                os.fchmod(wfd, keep_mode)
        except OSError:
            os.close(wfd)
            os.unlink(tmp, dir_fd=parent)
            raise Fail(WRITE_FAILED, target) from None
        os.close(wfd)
        try:
            # Both names relative to the same directory descriptor: the rename cannot land
            # anywhere else, and a symlink now at `name` is replaced, not followed.
            os.rename(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError:
            os.unlink(tmp, dir_fd=parent)
            raise Fail(WRITE_FAILED, target) from None
        return existed
    finally:
        os.close(parent)


def op_discard(walk: Walk, target: str, token: str) -> None:
    try:
        parent, _ = walk.resolve(target)
    except Fail:
        return
    try:
        os.unlink(f".sandlot-write.{token}.tmp", dir_fd=parent)
    except OSError:
        pass
    finally:
        os.close(parent)


def op_grep(
    walk: Walk, target: str, rg_pat: str, ere: str, selector: str, icase: str, ctx: str,
    limit: str, use_rg: str, excludes: str,
) -> None:
    """grep through descriptors: one file, or every regular file below a directory (listed
    by os.fwalk, which never enters a symlink), each opened component by component with
    O_NOFOLLOW from the directory's descriptor and searched as /dev/fd/N under its own name:
    a name a racing process turns into a symlink is skipped, never followed."""
    engine = "rg" if use_rg == "1" and which("rg") else "find"
    flags = ["-i"] if icase == "i" else []
    sink = Bounded(int(limit))
    # The session helper searches in process where that gives rg's exact answer (its
    # _session/helper/search.py); its plan is None for a pattern only rg can judge.
    planner = getattr(IO, "grep_plan", None) if engine == "rg" else None
    plan = None if planner is None else planner(rg_pat, icase == "i")
    if plan is None:
        check_pattern(engine, rg_pat, ere, flags)
    try:
        fd = open_file(walk, target)
    except Fail as failure:
        if failure.code != IS_A_DIRECTORY:
            raise
        top = open_directory(walk, target)
        try:
            sink.write(b"\x1eengine %s\n\x1ekind dir\n" % engine.encode())
            names = names_below(top, selector, set(excludes.split("/")) - {""})
            for start in range(0, len(names), 256):
                batch: list[tuple[str, int]] = []
                for name in names[start:start + 256]:
                    opened = open_below(top, name[2:])
                    if opened is not None:
                        batch.append((os.fsdecode(name), opened))
                search(batch, engine, rg_pat, ere, flags, ctx, sink, plan)
        finally:
            os.close(top)
        return
    sink.write(b"\x1eengine %s\n\x1ekind file\n" % engine.encode())
    search([("./" + target.rsplit("/", 1)[-1], fd)], engine, rg_pat, ere, flags, ctx, sink,
           plan)


class Bounded:
    """Standard output, cut after `limit` bytes (the sh scripts' `head -c`)."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def write(self, data: bytes) -> None:
        if self.left > 0:
            out(data[: self.left])
            self.left -= len(data)


#: Patterns found valid (the session helper checks each once; a one-shot run, once anyway).
CHECKED: set[tuple[str, ...]] = set()


def check_pattern(engine: str, rg_pat: str, ere: str, flags: list[str]) -> None:
    argv = (["rg", "--no-config", *flags, "-e", rg_pat] if engine == "rg"
            else ["grep", "-E", *flags, "-e", ere])
    if tuple(argv) in CHECKED:
        return
    done = run_tool(argv, input=b"\n", capture_output=True, check=False)
    if done.returncode == 2:
        raise Fail(BAD_PATTERN, done.stderr.decode("utf-8", "replace").strip())
    if len(CHECKED) > 1024:
        CHECKED.clear()
    CHECKED.add(tuple(argv))


def names_below(top: int, selector: str, excludes: set[str],
                regular_only: bool = False) -> list[bytes]:
    """Every file name below the directory TOP, as "./..." (symlinks to directories are not
    entered, an excluded name is pruned; symlinks to directories are not entered, an
    excluded name is pruned), sorted by bytes, as the sh script lists them. Names are only
    collected here: each file is opened later by open_below, so a tree of any size never
    holds more than a batch open."""
    found: list[bytes] = []
    for folder, dirs, files, folder_fd in os.fwalk(b".", follow_symlinks=False, dir_fd=top):
        dirs[:] = [d for d in dirs if os.fsdecode(d) not in excludes]
        found.extend(os.path.join(folder, name) for name in files
                     if os.fsdecode(name) not in excludes
                     and (not regular_only or is_regular(folder_fd, name)))
    if selector and found:
        # The same grep -E as the sh script's select0, so the glob's ERE means the same.
        chosen = run_tool(["grep", "-z", "-E", "-e", "^\\./" + selector[1:]],
                                input=b"\0".join(found) + b"\0", capture_output=True,
                                env={**os.environ, "LC_ALL": "C"}, check=False)
        found = [name for name in chosen.stdout.split(b"\0") if name]
    found.sort()
    return found


def is_regular(dir_fd: int, name: bytes) -> bool:
    """Whether NAME in DIR_FD is a regular file (not followed: find's -type f)."""
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def open_below(top: int, rel: bytes) -> int | None:
    """The regular file REL opened from the directory descriptor TOP one component at a time,
    none of them followed if it is (or became) a symlink: None when it is not a regular file
    of this tree any more."""
    parts = rel.split(b"/")
    fd = os.dup(top)
    try:
        for part in parts[:-1]:
            inner = os.open(part, DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = inner
        found = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                        dir_fd=fd)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not stat.S_ISREG(os.fstat(found).st_mode):
        os.close(found)
        return None
    os.set_blocking(found, True)
    return found


def search(entries: list[tuple[str, int]], engine: str, rg_pat: str, ere: str,
           flags: list[str], ctx: str, sink: Bounded,
           plan: Callable[..., None] | None = None) -> None:
    """Search the open files; output as the sh script prints it, under the files' names
    (PLAN: the session helper's in-process search, which hands rg what it leaves)."""
    if not entries:
        return
    names = {f"/dev/fd/{fd}": name for name, fd in entries}
    fds = [fd for _, fd in entries]
    try:
        if engine == "rg":
            def rg(chosen: list[tuple[str, int]]) -> list[dict[str, object]]:
                # rg memory-maps a run of at most 10 named files, and its answer for a file
                # with a NUL byte depends on that: part of a batch is searched as the whole.
                whole = ["--no-mmap"] if len(entries) > 10 and len(chosen) <= 10 else []
                return rg_events(chosen, rg_pat, [*flags, *whole], ctx)
            if plan is not None:
                plan(entries, int(ctx), sink.write, rg)
                return
            for event in rg(entries):
                sink.write(json.dumps(event).encode() + b"\n")
            return
        hits = run_tool(["grep", "-l", "-a", "-E", *flags, "-e", ere, "--", *names],
                              pass_fds=fds, capture_output=True, check=False)
        context = ["-C", ctx] if int(ctx) > 0 else []
        for dev in hits.stdout.decode().split("\n"):
            if dev not in names:
                continue
            name = names[dev].encode("utf-8", "surrogateescape")
            fd = int(dev.rsplit("/", 1)[1])
            if is_binary(os.pread(fd, 8192, 0)):
                sink.write(b"\x1eB" + name + b"\0")
                continue
            sink.write(b"\x1eF" + name + b"\0")
            lines = run_tool(["grep", "-n", "-a", "-E", *flags, *context, "-e", ere,
                                    "--", dev], pass_fds=[fd], capture_output=True, check=False)
            sink.write(lines.stdout)
    finally:
        for fd in fds:
            os.close(fd)


def rg_events(entries: list[tuple[str, int]], rg_pat: str, flags: list[str],
              ctx: str) -> list[dict[str, object]]:
    """rg's JSON events for the open files ENTRIES, under the files' names."""
    names = {f"/dev/fd/{fd}": name for name, fd in entries}
    # -j1: one thread searches the files in the order given (the names' order).
    done = run_tool(["rg", "--no-config", "--json", "-j1", *flags, "-C", ctx, "-e", rg_pat,
                     "--", *names], pass_fds=[fd for _, fd in entries], capture_output=True,
                    check=False)
    events: list[dict[str, object]] = []
    for line in done.stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        data = event.get("data") or {}
        shown = (data.get("path") or {}).get("text")
        if shown in names:
            data["path"] = {"text": names[shown]}
        events.append(event)
    return events


def open_directory(walk: Walk, target: str) -> int:
    """The directory at `target`, opened race-free (from the descriptor the walk opened); the
    sh script then works below it as "." without resolving again (exec_in)."""
    parent, name = walk.resolve(target)
    try:
        if name is None or name == ".":
            fd = os.dup(parent)
        else:
            try:
                fd = os.open(name, DIR_FLAGS, dir_fd=parent)
            except FileNotFoundError:
                raise Fail(NOT_FOUND, target) from None
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise Fail(ESCAPES, target) from None
                raise Fail(NOT_A_DIRECTORY, target) from None
    finally:
        os.close(parent)
    return fd


def op_glob(walk: Walk, target: str, ere: str, limit: str, use_rg: str, excludes: str) -> None:
    """glob: the regular files below the directory entered race-free, as the sh script lists
    them (its `list0 | select0 | sort -z | head -c`: hidden files included, excluded names
    pruned, symlinks neither listed nor entered, the ERE applied by the same grep -z), listed
    by names_below instead of a shell pipeline."""
    engine = "rg" if use_rg == "1" and which("rg") else "find"
    fd = open_directory(walk, target)
    try:
        sink = Bounded(int(limit))
        sink.write(b"\x1eengine %s\x00" % engine.encode())
        for name in names_below(fd, ere, set(excludes.split("/")) - {""}, regular_only=True):
            sink.write(name + b"\x00")
    finally:
        os.close(fd)


def which(program: str) -> bool:
    for folder in os.environ.get("PATH", "").split(":"):
        if folder and os.access(os.path.join(folder, program), os.X_OK):
            return True
    return False


OPS: dict[str, Callable[..., None]] = {
    "read": op_read,
    "slurp": op_slurp,
    "write": op_write,
    "write_many": op_write_many,
    "discard": op_discard,
    "grep": op_grep,
    "glob": op_glob,
    "fetch": op_fetch,
    "list": op_list,
}


def script() -> str:
    """The sh script this operation replaces (for what it leaves to it: list and glob)."""
    return str(IO.script)


def run(argv: list[str]) -> None:
    """One operation: ARGV is SCRIPT OP ROOT TARGET [ARGS...]; a failure raises `Fail`."""
    IO.script, op, root, target, *rest = argv
    OPS[op](Walk(root), target, *rest)


def main() -> None:
    try:
        run(sys.argv[1:])
    except Fail as failure:
        sys.stdout.flush()
        sys.stderr.write(f"{failure.detail}\n")
        sys.exit(failure.code)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
