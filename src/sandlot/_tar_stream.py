"""A host `tar -c` stream that a failing host tar can still spoil for its reader.

copy_in streams a directory as the stdout of a host `tar -c` into a `tar -x` in the sandbox,
which publishes what it extracted when it exits 0. GNU tar exits 1 when a file changes while it
is read ("file changed as we read it"), yet its archive is complete, so the sandbox side would
publish a copy the host knows is not consistent. The stream therefore holds back its last
records until the host tar has exited; when it failed, the stream ends where the sandbox's tar
must fail: inside a member's data, or after a header that promises data that never comes.
Neither GNU tar nor busybox tar exits 0 on such an archive (tests/test_tar_stream.py tries
every cut point with both). The stream itself never raises: the caller reads `failure` after
the sandbox side has finished, so no error is left in a backend's stdin-feeding task.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path

import anyio

from .errors import SourceChangedError, TransferError

BLOCK = 512
#: Bytes held back until the host tar's exit status is known: two records of GNU tar's
#: default blocking, so the end-of-archive blocks are never sent before it (a reader stops
#: cleanly at them).
HOLD = 2 * 20 * BLOCK

_CHANGED = re.compile(
    r"^tar: (?P<path>.+?): (?P<what>file changed as we read it|file removed before we read it|"
    r"file shrank by \d+ bytes?[^\n]*)$",
    re.M,
)


def _poison() -> bytes:
    """Valid headers of a member whose data never comes. Twice: the first may inherit a
    long name from a GNU `L` member sent just before it, and a name ending in "/" makes GNU
    tar take it for a directory whose data it does not expect; the second is a file."""
    info = tarfile.TarInfo(".sandlot-host-tar-failed")
    info.size = 1 << 30
    return info.tobuf(format=tarfile.USTAR_FORMAT) * 2


def _member_size(header: bytes) -> int:
    """Bytes of data after a header (0 for an end-of-archive block)."""
    if not header.strip(b"\0"):
        return 0
    field = header[124:136]
    if field[0] & 0x80:  # GNU base-256 for sizes beyond 8 GiB
        return int.from_bytes(field[1:], "big")
    text = field.split(b"\0", 1)[0].strip()
    return int(text, 8) if text else 0


class TarCursor:
    """Tracks member boundaries in the bytes of a tar stream sent so far."""

    def __init__(self) -> None:
        self.head = bytearray()  # bytes of a header not yet complete
        self.skip = 0  # data bytes (padded to blocks) still due for the current member

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        while view:
            if self.skip:
                step = min(self.skip, len(view))
                self.skip -= step
                view = view[step:]
                continue
            step = min(BLOCK - len(self.head), len(view))
            self.head += view[:step]
            view = view[step:]
            if len(self.head) == BLOCK:
                size = _member_size(bytes(self.head))
                self.skip = -(-size // BLOCK) * BLOCK
                self.head.clear()

    @property
    def in_header(self) -> bool:
        return bool(self.head)


class HostTarFailure:
    """What went wrong on the host side, once the stream has ended."""

    def __init__(self) -> None:
        self.code: int | None = None
        self.stderr = ""

    @property
    def failed(self) -> bool:
        return self.code not in (None, 0)

    def error(self, source: Path, what: str) -> TransferError:
        """The typed error for a failed host tar that read `source`."""
        return host_tar_error(self.code, self.stderr, source, what)


def host_tar_error(code: int | None, stderr: str, source: Path, what: str) -> TransferError:
    """SourceChangedError naming the file when tar says one changed under it, else
    TransferError with tar's own words; either way nothing was published."""
    match = _CHANGED.search(stderr)
    if match is not None:
        path = (source / match["path"]).resolve(strict=False)
        return SourceChangedError(
            f"{what}: {path}: {match['what']}; nothing was copied. Stop what writes under "
            f"{source} (or copy a snapshot of it) and copy again", path=str(path))
    return TransferError(f"{what}: host tar failed (exit {code}), nothing was copied: "
                         f"{stderr.strip()}")


def spoiled_end(cursor: TarCursor, held: bytes) -> bytes:
    """The bytes to send after a host failure so the reader's tar fails.

    Inside a member's data, ending there is enough. At (or inside) a header, the header is
    completed from the held bytes (those are the archive's own); then either its data is due,
    or a poison header promising data follows.
    """
    if cursor.skip:
        return b""
    tail = bytes(held[: BLOCK - len(cursor.head)]) if cursor.in_header else b""
    probe = TarCursor()
    probe.head = bytearray(cursor.head)
    probe.feed(tail)
    return tail if probe.skip else tail + _poison()


async def host_tar_stream(args: list[str], failure: HostTarFailure) -> AsyncGenerator[bytes]:
    """Yield a host `tar` command's stdout; record its failure in `failure` and spoil the end
    of the stream instead of raising (see the module docstring)."""
    cursor = TarCursor()
    held = bytearray()
    # stderr goes to a file: tar writes its warnings while it writes the archive, and a pipe
    # nobody drains until the end would stall it once full.
    with tempfile.TemporaryFile() as errors:
        async with await anyio.open_process(
            ["tar", *args], stdout=subprocess.PIPE, stderr=errors
        ) as proc:
            assert proc.stdout is not None
            async for part in proc.stdout:
                held.extend(part)
                if len(held) > HOLD:
                    out = bytes(held[: len(held) - HOLD])
                    del held[: len(out)]
                    cursor.feed(out)
                    yield out
            failure.code = await proc.wait()
        errors.seek(0)
        failure.stderr = errors.read(64 << 10).decode(errors="replace")
    if not failure.failed:
        if held:
            yield bytes(held)
        return
    end = spoiled_end(cursor, bytes(held))
    if end:
        yield end
