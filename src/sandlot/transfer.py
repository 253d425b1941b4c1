"""Copies as tar streams over a sandbox's own command channel, shared by every backend.

Both ends stage before they publish: the sandbox side extracts into a hidden sibling of the
destination and renames it into place; the host side does the same. An interrupted copy so
leaves no half-written file at the destination. Only POSIX `sh`, `tar`, `cat`, `cp`, `mv`,
`mkdir`, `rm` and `chmod` are needed inside the sandbox (busybox is enough).
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import secrets
import shutil
import stat
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
from anyio.abc import Process as HostProcess

from ._engine import Engine, SpawnSpec
from ._tar_stream import HostTarFailure, host_tar_stream
from ._tree import remove_tree
from .errors import TransferError
from .output import OutputCapture

CHUNK = 256 << 10
_ERR_LIMIT = 64 << 10

# Sandbox-side scripts. Positional parameters carry every path, so no path is ever parsed by
# the shell; exit 41/44 are our own "wrong kind of destination" / "source missing" codes.
# `tar -xo` (GNU, busybox and BSD tar alike) gives the files to the user commands run as
# instead of the host's owners: a root without CAP_CHOWN (bubblewrap) could not, and `docker
# cp` (the large-copy path) does the same.
_UNPACK_DIR = r"""
D=$1; P=$2; S=$3
mkdir -p -- "$P" && rm -rf -- "$S" && mkdir -- "$S" && tar -xof - -C "$S" || {
  rc=$?; cat >/dev/null; rm -rf -- "$S"; exit $rc; }
if [ -e "$D" ] || [ -L "$D" ]; then
  if [ ! -d "$D" ]; then rm -rf -- "$S"
    echo "sandlot: destination exists and is not a directory: $D" >&2; exit 41; fi
  cp -a -- "$S/." "$D/"; rc=$?; rm -rf -- "$S"; exit $rc
fi
mv -- "$S" "$D"
"""

_WRITE_FILE = r"""
D=$1; P=$2; S=$3; M=$4
if [ -d "$D" ]; then cat >/dev/null
  echo "sandlot: destination is a directory, expected a file path: $D" >&2; exit 41; fi
mkdir -p -- "$P" && cat > "$S" && chmod "$M" "$S" && mv -f -- "$S" "$D" || {
  rc=$?; rm -f -- "$S"; exit $rc; }
"""

_PACK = r"""
[ -e "$1" ] || [ -L "$1" ] || {
  echo "sandlot: no such file or directory in sandbox: $1" >&2; exit 44; }
cd -- "$2" || exit 1
# GNU tar unquotes backslash escapes in member names given as arguments (a\tb would become
# a<TAB>b); --no-unquote keeps every byte. busybox tar takes names as they are.
if tar --version 2>/dev/null | grep -q GNU; then exec tar --no-unquote -cf - "$3"; fi
exec tar -cf - "$3"
"""


def _stage_name() -> str:
    return f".sandlot-stage-{secrets.token_hex(6)}"


async def _run_in_sandbox(
    engine: Engine,
    script: str,
    args: list[str],
    *,
    stdin: bytes | AsyncIterator[bytes] | None,
    stdout: OutputCapture | HostSinkProcess | None,
    what: str,
) -> None:
    err = OutputCapture(_ERR_LIMIT)

    async def out_sink(data: bytes) -> None:
        if isinstance(stdout, HostSinkProcess):
            await stdout.send(data)
        elif stdout is not None:
            stdout.feed(data)

    async def err_sink(data: bytes) -> None:
        err.feed(data)

    spec = SpawnSpec(
        argv=["sh", "-c", script, "sandlot-copy", *args],
        cwd="/",
        env={},
        sudo=False,
        stdin=stdin,
        stdout=out_sink,
        stderr=err_sink,
        display=what,
    )
    code, _ = await engine.run(spec)
    if code != 0:
        raise TransferError(f"{what} failed in sandbox {engine.name!r} (exit {code}): "
                            f"{err.text().strip() or 'no error output'}")


class HostSinkProcess:
    """A host `tar -x` fed with bytes from the sandbox, with backpressure."""

    def __init__(self, process: HostProcess) -> None:
        self.process = process

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        try:
            await self.process.stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            raise TransferError("host tar stopped reading (see its error below)") from exc


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    async with await anyio.open_file(path, "rb") as handle:
        while chunk := await handle.read(CHUNK):
            yield chunk


async def copy_in(engine: Engine, source: Path, dest: str) -> None:
    parent = posixpath.dirname(dest.rstrip("/")) or "/"
    stage = posixpath.join(parent, _stage_name())
    if source.is_dir():
        await _copy_dir_in(engine, source, dest, parent, stage)
        return
    mode = f"{stat.S_IMODE(source.stat().st_mode):o}"
    await _run_in_sandbox(
        engine, _WRITE_FILE, [dest, parent, stage, mode], stdin=_file_chunks(source),
        stdout=None, what=f"copy_in {str(source)!r} -> {dest!r}",
    )


async def _copy_dir_in(engine: Engine, source: Path, dest: str, parent: str,
                       stage: str) -> None:
    """A directory as a host tar stream. A host tar failure spoils the stream's end, so the
    sandbox side fails and publishes nothing; the host's error is the one raised."""
    what = f"copy_in {str(source)!r} -> {dest!r}"
    failure = HostTarFailure()
    stream = host_tar_stream(["--numeric-owner", "-C", str(source), "-cf", "-", "."], failure)
    try:
        await _run_in_sandbox(engine, _UNPACK_DIR, [dest, parent, stage], stdin=stream,
                              stdout=None, what=what)
    except TransferError as exc:
        if failure.failed:
            raise failure.error(source, what) from exc
        raise
    finally:
        # A stream the command stopped reading: its host tar ends here. (A backend may still
        # be unwinding its stdin feeder inside the generator; that unwinding ends it then.)
        with contextlib.suppress(RuntimeError):
            await stream.aclose()
    if failure.failed:  # not reachable with GNU or busybox tar in the sandbox; never silent
        raise failure.error(source, what)


async def copy_out(engine: Engine, source: str, host: Path) -> None:
    trimmed = source.rstrip("/") or "/"
    parent = posixpath.dirname(trimmed) or "/"
    base = posixpath.basename(trimmed) or "."
    member = base if base == "." else f"./{base}"
    host = host.absolute()
    host.parent.mkdir(parents=True, exist_ok=True)
    stage = host.parent / _stage_name()
    stage.mkdir()
    try:
        async with await anyio.open_process(
            ["tar", "-xf", "-", "-C", str(stage)],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        ) as untar:
            sink = HostSinkProcess(untar)
            try:
                await _run_in_sandbox(
                    engine, _PACK, [trimmed, parent, member], stdin=None, stdout=sink,
                    what=f"copy_out {source!r} -> {str(host)!r}",
                )
            finally:
                assert untar.stdin is not None
                await untar.stdin.aclose()
            assert untar.stderr is not None
            untar_err = b"".join([c async for c in untar.stderr])
            if await untar.wait() != 0:
                raise TransferError(
                    f"copy_out {source!r}: host tar failed: {untar_err.decode(errors='replace')}"
                )
        await anyio.to_thread.run_sync(_publish, stage / base, host)
    finally:
        await anyio.to_thread.run_sync(remove_tree, stage)


def _publish(item: Path, host: Path) -> None:
    """Move a staged copy to its exact host destination."""
    if item.is_dir() and not item.is_symlink():
        if host.exists() and not host.is_dir():
            raise TransferError(f"copy_out: host destination exists and is not a directory: {host}")
        if host.is_dir():
            shutil.copytree(item, host, dirs_exist_ok=True, symlinks=True)
        else:
            os.rename(item, host)
        return
    if host.is_dir() and not host.is_symlink():
        raise TransferError(
            f"copy_out: host destination is a directory, expected a file path: {host}"
        )
    os.replace(item, host)
