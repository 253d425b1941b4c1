"""Stages new and changed files into the snapshot store, hashed by python3 instead of git.

Run INSIDE the sandbox by the snapshot scripts (scripts.py `stage`) as `python3 -I -S -c
SOURCE`, with the root being recorded as the working directory and GIT_DIR / GIT_INDEX_FILE
set; stdin holds the NUL-separated paths `git ls-files -z -o -m` printed (the files `git add
-A` would hash). Standard library only, and Python 3.8 or newer.

Why (adr/0056): git names and checks every object with its collision-detecting SHA-1 in
software, twice per byte (the object name and the pack checksum), which made a first snapshot
of 200 MiB cost 1.4 s of CPU where a `tar c | tar x` of the same tree costs 0.5 s. Python's
hashlib uses the machine's SHA-1 (with the CPU's SHA instructions where it has them), several
times faster. The objects are the same: a blob's name is SHA-1 of `blob <size>\\0<bytes>`
whoever computes it.

What it writes, and what it leaves to git:
- Each regular file and symlink listed becomes a blob in ONE new pack (stored, not compressed:
  the store's `core.compression` is 0 too) with its version 2 `.idx`, and an index entry
  carrying the file's stat, so the `git add -A` that always follows finds it clean and
  hashes nothing. A blob the store already has is not written again.
- Whatever is not plainly a file or symlink (a nested repository, a path that vanished or
  became a directory, a file that changed while it was read) gets no entry from here: the
  old entry is dropped where the path is gone, and `git add -A` does the rest the way it
  always does. So the result is what `git add -A` alone would make; this only saves hashing.
- The index is read and written in git's format (version 2; an entry with extended flags or
  an extension git requires makes this leave everything to git: exit 3). Entries it keeps that
  were racily clean (changed in the second the index was written, git's "racy git" rule) are
  written with size 0, git's own way of saying "compare the contents next time".

Exit status: 0 staged (or nothing to do); 3 left to git (nothing written); 28 the disk is
full (nothing kept; the message says so); anything else is a failure the script also leaves
to git.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import queue
import stat
import struct
import sys
import threading
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

#: Exit statuses the script tells apart.
LEFT_TO_GIT = 3
DISK_FULL = 28

#: A file up to this size is read whole by the reader thread; a larger one is streamed into
#: the pack, CHUNK bytes at a time.
WHOLE = 1 << 20
CHUNK = 1 << 20
#: About how many bytes go to the pack file in one write.
FLUSH = 1 << 20
#: How many reads may wait for the writer.
QUEUE = 32
#: The largest stored (uncompressed) deflate block.
BLOCK = 65535
#: How many buffers one writev may carry (Linux's IOV_MAX).
IOV_MAX = 1024
#: Index entry flags: git's extended-flags bit, and the 12 bits of the name's length.
EXTENDED = 0x4000
STAGE = 0x3000
NAME_MASK = 0x0FFF
GITLINK = 0o160000
ENTRY = struct.Struct(">10I20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size
U32 = 0xFFFFFFFF


class LeftToGit(Exception):
    """Something this does not handle: nothing is written and `git add -A` does it all."""


# ---- the index -----------------------------------------------------------------------------


def read_index(path: str) -> tuple[dict[bytes, bytes], int | None]:
    """The index at `path` as {name: packed entry without its name}, and its mtime in whole
    seconds (None when there is no index yet)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
            mtime = os.fstat(handle.fileno()).st_mtime_ns // 1_000_000_000
    except FileNotFoundError:
        return {}, None
    if (len(data) < 32 or data[:4] != b"DIRC"
            or hashlib.sha1(data[:-20]).digest() != data[-20:]):
        raise LeftToGit("the index is not one this reads")
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3):
        raise LeftToGit(f"index version {version}")
    entries: dict[bytes, bytes] = {}
    at = 12
    for _ in range(count):
        fields = ENTRY.unpack_from(data, at)
        flags = fields[-1]
        if flags & (EXTENDED | STAGE):
            raise LeftToGit("an entry with extended flags or a merge stage")
        start = at + ENTRY.size
        end = data.index(b"\0", start)
        name = data[start:end]
        entries[name] = data[at:start]
        at += (ENTRY.size + len(name) + 8) & ~7
    while at < len(data) - 20:
        signature = data[at:at + 4]
        if not b"A" <= signature[:1] <= b"Z":  # an extension git may not drop
            raise LeftToGit(f"index extension {signature!r}")
        at += 8 + struct.unpack(">I", data[at + 4:at + 8])[0]
    return entries, mtime


def entry_for(st: os.stat_result, mode: int, sha: bytes, name: bytes) -> bytes:
    """An index entry's fixed part, as git fills it from a stat (each field cut to 32 bits)."""
    return ENTRY.pack(
        (st.st_ctime_ns // 1_000_000_000) & U32, st.st_ctime_ns % 1_000_000_000,
        (st.st_mtime_ns // 1_000_000_000) & U32, st.st_mtime_ns % 1_000_000_000,
        st.st_dev & U32, st.st_ino & U32, mode, st.st_uid & U32, st.st_gid & U32,
        st.st_size & U32, sha, min(len(name), NAME_MASK),
    )


def racy(entry: bytes, index_mtime: int) -> bool:
    """Whether the file was changed in the second its index was written, or later (git's
    "racy git" rule): its stat then cannot prove it unchanged."""
    return bool(ENTRY.unpack(entry)[2] >= index_mtime)


def smudged(entry: bytes) -> bytes:
    """`entry` with size 0, git's own mark for "compare the contents next time": git
    compares the contents of an entry whose size disagrees with the file's."""
    fields = list(ENTRY.unpack(entry))
    fields[9] = 0
    return ENTRY.pack(*fields)


def index_bytes(entries: dict[bytes, bytes]) -> bytes:
    parts = [b"DIRC", struct.pack(">II", 2, len(entries))]
    for name in sorted(entries):  # git's order: the names' bytes, compared as memcmp does
        parts += [entries[name], name, b"\0" * (8 - (ENTRY.size + len(name)) % 8)]
    body = b"".join(parts)
    return body + hashlib.sha1(body).digest()


def conflicting(names: set[bytes]) -> bool:
    """Whether a name is also the directory of another (git refuses such an index)."""
    for name in names:
        at = name.rfind(b"/")
        while at > 0:
            if name[:at] in names:
                return True
            at = name.rfind(b"/", 0, at)
    return False


# ---- the object store ----------------------------------------------------------------------


def known_objects(objects: str) -> set[bytes]:
    """Every object name the store has: those in its packs' indexes and its loose ones."""
    known: set[bytes] = set()
    packs = os.path.join(objects, "pack")
    for name in os.listdir(packs) if os.path.isdir(packs) else ():
        if not (name.startswith("pack-") and name.endswith(".idx")):
            continue
        with open(os.path.join(packs, name), "rb") as handle:
            data = handle.read()
        if data[:8] != b"\377tOc\0\0\0\2":
            raise LeftToGit(f"pack index {name} is not version 2")
        count = struct.unpack(">I", data[8 + 255 * 4:8 + 256 * 4])[0]
        table = 8 + 256 * 4
        known.update(data[table + 20 * i:table + 20 * (i + 1)] for i in range(count))
    for first in os.listdir(objects):
        if len(first) == 2:
            for rest in os.listdir(os.path.join(objects, first)):
                with contextlib.suppress(ValueError):
                    known.add(bytes.fromhex(first + rest))
    return known


#: A zlib stream's header for "deflate, 32 KiB window, no compression".
ZLIB_HEAD = b"\x78\x01"
#: A final stored deflate block of nothing (the whole stream of an empty blob).
EMPTY_FINAL = b"\x01\x00\x00\xff\xff"


def object_head(size: int) -> bytes:
    """A pack entry's header for a blob of `size` bytes: type 3, then the size, 7 bits a
    byte after the first 4."""
    head = bytearray()
    byte = 0x30 | (size & 0x0F)
    size >>= 4
    while size:
        head.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    head.append(byte)
    return bytes(head)


def stored_blocks(data: bytes, final: bool,
                  crc: int) -> tuple[list[bytes | memoryview], int]:
    """`data` as stored (uncompressed) deflate blocks, the last one marked final when `final`
    is, and the CRC-32 `crc` carried on over them."""
    if not data:
        return ([EMPTY_FINAL], zlib.crc32(EMPTY_FINAL, crc)) if final else ([], crc)
    parts: list[bytes | memoryview] = []
    view = memoryview(data)
    for at in range(0, len(data), BLOCK):
        block = view[at:at + BLOCK]
        last = final and at + BLOCK >= len(data)
        header = struct.pack("<BHH", last, len(block), len(block) ^ 0xFFFF)
        crc = zlib.crc32(block, zlib.crc32(header, crc))
        parts += [header, block]
    return parts, crc


class Pack:
    """One pack being written under `objects/pack`: objects appended, a rejected one cut off
    again, then its count, checksum and index written and both renamed into place."""

    def __init__(self, objects: str) -> None:
        self.dir = os.path.join(objects, "pack")
        os.makedirs(self.dir, exist_ok=True)
        self.tmp = os.path.join(self.dir, f"tmp_pack_sandlot_{os.getpid()}")
        self.fd = os.open(self.tmp, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o444)
        self.end = 0
        self.pending: list[bytes | memoryview] = []
        self.pending_bytes = 0
        self.entries: list[tuple[bytes, int, int]] = []  # name, crc32, offset
        self._append([b"PACK\0\0\0\2\0\0\0\0"])  # the count goes in when it is known

    def _append(self, parts: Sequence[bytes | memoryview]) -> None:
        """Queue `parts` for the file; they go out in writes of about FLUSH bytes."""
        self.pending += parts
        size = sum(len(p) for p in parts)
        self.pending_bytes += size
        self.end += size
        if self.pending_bytes >= FLUSH or len(self.pending) >= IOV_MAX:
            self._flush()

    def _flush(self) -> None:
        parts, self.pending, self.pending_bytes = self.pending, [], 0
        for at in range(0, len(parts), IOV_MAX):
            batch = parts[at:at + IOV_MAX]
            done = os.writev(self.fd, batch)
            if done != sum(len(p) for p in batch):  # short: finish it with plain writes
                rest = b"".join(bytes(p) for p in batch)[done:]
                while rest:
                    rest = rest[os.write(self.fd, rest):]

    def add(self, data: bytes, sha: bytes) -> None:
        """Append the blob of `data`, read and named already (`Read`)."""
        start = self.end
        head = object_head(len(data))
        crc = zlib.crc32(ZLIB_HEAD, zlib.crc32(head))
        blocks, crc = stored_blocks(data, True, crc)
        tail = struct.pack(">I", zlib.adler32(data))
        self._append([head, ZLIB_HEAD, *blocks, tail])
        self.entries.append((sha, zlib.crc32(tail, crc) & U32, start))

    def add_streamed(self, size: int, read: Callable[[int], bytes]) -> tuple[bytes, bool]:
        """Append the blob of the `size` bytes `read` gives, a chunk at a time; (its name,
        whether `read` gave exactly that many). The caller cuts it off again (`reject`) when
        it should not stay."""
        start = self.end
        head = object_head(size)
        self._append([head, ZLIB_HEAD])
        crc = zlib.crc32(ZLIB_HEAD, zlib.crc32(head))
        name = hashlib.sha1(b"blob %d\0" % size)
        adler = 1
        left = size
        exact = True
        while left:
            data = read(min(left, CHUNK))
            if not data:
                exact = False  # the file shrank while it was read
                break
            left -= len(data)
            name.update(data)
            adler = zlib.adler32(data, adler)
            blocks, crc = stored_blocks(data, not left, crc)
            self._append(blocks)
        if exact and read(1):
            exact = False  # it grew
        tail = struct.pack(">I", adler)
        self._append([tail])
        sha = name.digest()
        self.entries.append((sha, zlib.crc32(tail, crc) & U32, start))
        return sha, exact

    def reject(self) -> None:
        """Cut the last object off again."""
        _, _, start = self.entries.pop()
        self._flush()
        os.ftruncate(self.fd, start)
        os.lseek(self.fd, start, os.SEEK_SET)
        self.end = start

    def finish(self) -> None:
        """Write the count and checksum, the `.idx`, and rename both into place (the pack
        first: git ignores a pack without an index, never an index without its pack)."""
        if not self.entries:
            self.discard()
            return
        self._flush()
        os.pwrite(self.fd, struct.pack(">I", len(self.entries)), 8)
        checksum = hashlib.sha1()
        os.lseek(self.fd, 0, os.SEEK_SET)
        buffer = bytearray(8 << 20)
        while True:
            got = os.readv(self.fd, [buffer])
            if not got:
                break
            checksum.update(memoryview(buffer)[:got])
        trailer = checksum.digest()
        self._append([trailer])
        self._flush()
        os.close(self.fd)
        self.fd = -1
        final = os.path.join(self.dir, f"pack-{trailer.hex()}")
        idx_tmp = os.path.join(self.dir, f"tmp_idx_sandlot_{os.getpid()}")
        try:
            with open(idx_tmp, "wb") as handle:
                handle.write(idx_bytes(self.entries, trailer))
            os.chmod(idx_tmp, 0o444)
            os.rename(self.tmp, final + ".pack")
            os.rename(idx_tmp, final + ".idx")
        except BaseException:
            for leftover in (idx_tmp, self.tmp):
                with contextlib.suppress(OSError):
                    os.unlink(leftover)
            raise

    def discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        with contextlib.suppress(OSError):
            os.unlink(self.tmp)


def idx_bytes(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version 2 pack index: fan-out, sorted names, CRC-32s, offsets, checksums."""
    ordered = sorted(entries)
    fanout = [0] * 256
    for sha, _, _ in ordered:
        fanout[sha[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    small: list[int] = []
    large: list[int] = []
    for _, _, offset in ordered:
        if offset < 0x80000000:
            small.append(offset)
        else:
            small.append(0x80000000 | len(large))
            large.append(offset)
    body = b"".join([
        b"\377tOc", struct.pack(">I", 2), struct.pack(">256I", *fanout),
        b"".join(sha for sha, _, _ in ordered),
        struct.pack(f">{len(ordered)}I", *(crc for _, crc, _ in ordered)),
        struct.pack(f">{len(small)}I", *small), struct.pack(f">{len(large)}Q", *large),
        pack_checksum,
    ])
    return body + hashlib.sha1(body).digest()


# ---- staging -------------------------------------------------------------------------------


def same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_ino, a.st_dev, a.st_size, a.st_mtime_ns, a.st_ctime_ns, a.st_mode) == (
        b.st_ino, b.st_dev, b.st_size, b.st_mtime_ns, b.st_ctime_ns, b.st_mode)


class Read(NamedTuple):
    """What the reader made of one name."""

    name: bytes
    stat: os.stat_result | None  # None: not a file or symlink, gone, or changed while read
    mode: int = 0
    data: bytes | None = None  # None (with a stat): too large to hold, the writer streams it
    sha: bytes = b""


def read_one(name: bytes) -> Read:
    """`name` read whole and named, if it is a file or symlink that stayed the same."""
    try:
        before = os.lstat(name)
        if stat.S_ISLNK(before.st_mode):
            data = os.readlink(name)
            if not same(os.lstat(name), before):
                return Read(name, None)
            mode = 0o120000
        elif stat.S_ISREG(before.st_mode):
            mode = 0o100755 if before.st_mode & stat.S_IXUSR else 0o100644
            if before.st_size > WHOLE:
                return Read(name, before, mode)
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                chunks = [os.read(fd, before.st_size + 1)]  # one more: did it grow?
                while chunks[-1] and sum(len(c) for c in chunks) <= before.st_size:
                    chunks.append(os.read(fd, before.st_size + 1))
                data = b"".join(chunks)
                if len(data) != before.st_size or not same(os.fstat(fd), before):
                    return Read(name, None)
            finally:
                os.close(fd)
        else:
            return Read(name, None)
    except OSError:
        return Read(name, None)  # gone, not ours to read, a loop: git says what it makes of it
    sha = hashlib.sha1(b"blob %d\0" % len(data))
    sha.update(data)
    return Read(name, before, mode, data, sha.digest())


class Reader:
    """Reads and names the files in a thread of its own while the caller writes the pack:
    hashlib and zlib let go of the interpreter lock over large buffers, so the two overlap.
    At most QUEUE reads wait at a time (each at most WHOLE bytes)."""

    def __init__(self, names: list[bytes]) -> None:
        self.queue: queue.Queue[Read | BaseException | None] = queue.Queue(QUEUE)
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(names,), daemon=True)
        self.thread.start()

    def _put(self, item: Read | BaseException | None) -> bool:
        while not self.stopped.is_set():
            try:
                self.queue.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, names: list[bytes]) -> None:
        try:
            for name in names:
                if not self._put(read_one(name)):
                    return
            self._put(None)
        except BaseException as error:  # handed to the writer, which raises it
            self._put(error)

    def __iter__(self) -> Iterator[Read]:
        while True:
            item = self.queue.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def streamed(pack: Pack, item: Read) -> Read:
    """A file too large to hold, read into the pack a chunk at a time (cut off again when it
    changed meanwhile)."""
    assert item.stat is not None
    try:
        fd = os.open(item.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not same(os.fstat(fd), item.stat):
                return Read(item.name, None)
            sha, exact = pack.add_streamed(item.stat.st_size, lambda n: os.read(fd, n))
            after = os.fstat(fd)
        finally:
            os.close(fd)
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            raise
        return Read(item.name, None)
    if not exact or not same(after, item.stat):
        pack.reject()
        return Read(item.name, None)
    return Read(item.name, item.stat, item.mode, None, sha)


def plain(name: bytes) -> bool:
    """Whether `name` is (still) a file or symlink."""
    try:
        mode = os.lstat(name).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def stage(names: list[bytes], git_dir: str, index: str) -> None:
    entries, index_mtime = read_index(index)
    for name, kept in entries.items():
        if index_mtime is not None and racy(kept, index_mtime):
            entries[name] = smudged(kept)
    # Nested repositories' commits are git's to read.
    names = [n for n in names if n not in entries or ENTRY.unpack(entries[n])[6] != GITLINK]
    lock = index + ".lock"
    try:
        lock_fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise LeftToGit("the index is locked") from None
    try:
        objects = os.path.join(git_dir, "objects")
        known = known_objects(objects)
        pack = Pack(objects)
        reader = Reader(names)
        try:
            for item in reader:
                if item.stat is not None and item.data is None:
                    item = streamed(pack, item)
                    if item.stat is not None and item.sha in known:
                        pack.reject()  # the store has it: only the entry is new
                elif item.stat is not None and item.sha not in known:
                    assert item.data is not None
                    pack.add(item.data, item.sha)
                old = entries.get(item.name)
                if item.stat is not None:
                    known.add(item.sha)
                    entries[item.name] = entry_for(item.stat, item.mode, item.sha, item.name)
                elif old is not None and not plain(item.name):
                    del entries[item.name]  # gone, or a directory now: git adds what is there
                elif old is not None:
                    entries[item.name] = smudged(old)  # changed while read: git compares again
            if conflicting(set(entries)):
                raise LeftToGit("a name is both a file and a directory")
            pack.finish()
        except BaseException:
            reader.stop()
            pack.discard()
            raise
        reader.stop()
        with os.fdopen(lock_fd, "wb") as handle:
            lock_fd = -1
            handle.write(index_bytes(entries))
        os.rename(lock, index)
    except BaseException:
        if lock_fd >= 0:
            os.close(lock_fd)
        with contextlib.suppress(OSError):
            os.unlink(lock)
        raise


def main() -> int:
    names = [n for n in sys.stdin.buffer.read().split(b"\0") if n and not n.endswith(b"/")]
    if not names:
        return 0
    try:
        stage(names, os.environ["GIT_DIR"], os.environ["GIT_INDEX_FILE"])
    except LeftToGit as why:
        print(f"sandlot: snapshot files left to git: {why}", file=sys.stderr)
        return LEFT_TO_GIT
    except OSError as error:
        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            print(f"sandlot: No space left on device ({error.strerror})", file=sys.stderr)
            return DISK_FULL
        print(f"sandlot: snapshot packer: {error!r}", file=sys.stderr)
        return 1
    except Exception as error:  # the script goes on with git, and says why
        print(f"sandlot: snapshot packer: {error!r}", file=sys.stderr)
        return 1
    return 0


def run() -> None:
    sys.exit(main())


if __name__ == "__main__":
    run()
