"""Copies through `docker cp`, piped straight between the engine and a host `tar`.

The engine reads or writes the archive itself: no exec stream and no relay through this
process. `docker cp C:PATH -` serves every copy_out. For copy_in, bench/docker_bench.py shows
`docker cp -` and `docker exec -i ... tar x` alike for a 200 MiB file, while a tree of 10,000
small files went 1.12x slower through `docker cp -` (its two extra execs, below, and the
engine's own archive handling) than through the exec stream; so copy_in takes `docker cp -`
by size alone.

The contract stays the shared one (transfer.py, ADR 4): both ends stage and then publish.
copy_in pays two extra round trips for that (prepare the staging directory, publish it), so
small payloads keep the shared tar-over-exec path, and so do sandboxes whose commands do not
run as root: `docker cp` writes as root and keeps the archive's owners, which a non-root
sandbox user could then not change, while the exec path writes as that user.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ..._engine import engine_of
from ..._tar_stream import host_tar_error
from ..._tree import remove_tree
from ...errors import ProviderError, TransferError
from ...transfer import _publish, _run_in_sandbox, _stage_name

if TYPE_CHECKING:
    from .sandbox import DockerSandbox

#: copy_in goes through `docker cp -` from this many bytes on (files in a tree summed).
CP_MIN_BYTES = 16 << 20

# Positional parameters carry every path (never parsed by a shell); 41 = wrong kind of
# destination, as in transfer.py.
_PREPARE_IN = r"""
D=$1; P=$2; S=$3; K=$4
if [ "$K" = file ] && [ -d "$D" ]; then
  echo "sandlot: destination is a directory, expected a file path: $D" >&2; exit 41; fi
if [ "$K" = dir ] && { [ -e "$D" ] || [ -L "$D" ]; } && [ ! -d "$D" ]; then
  echo "sandlot: destination exists and is not a directory: $D" >&2; exit 41; fi
mkdir -p -- "$P" && rm -rf -- "$S" && mkdir -- "$S"
"""

_PUBLISH_IN = r"""
D=$1; S=$2; K=$3; N=$4
if [ "$K" = file ]; then mv -f -- "$S/$N" "$D"; rc=$?; rm -rf -- "$S"; exit $rc; fi
if [ -d "$D" ]; then cp -a -- "$S/." "$D/"; rc=$?; rm -rf -- "$S"; exit $rc; fi
mv -- "$S" "$D"
"""


def worth_docker_cp(source: Path) -> bool:
    """Whether a payload is big enough for the extra round trips of `docker cp -` to pay."""
    if not source.is_dir():
        return source.stat().st_size >= CP_MIN_BYTES
    total = 0
    for _root, _dirs, files in os.walk(source):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(_root, name)).st_size
        if total >= CP_MIN_BYTES:
            return True
    return False


async def copy_in(sandbox: DockerSandbox, source: Path, dest: str) -> None:
    """Stage with one exec, stream `tar -c | docker cp -` into it, publish with one exec."""
    parent = posixpath.dirname(dest.rstrip("/")) or "/"
    stage = posixpath.join(parent, _stage_name())
    kind = "dir" if source.is_dir() else "file"
    what = f"copy_in {str(source)!r} -> {dest!r}"
    engine = engine_of(sandbox)
    await _run_in_sandbox(engine, _PREPARE_IN, [dest, parent, stage, kind], stdin=None,
                          stdout=None, what=what)
    try:
        if kind == "dir":
            tar = ["tar", "--numeric-owner", "-C", str(source), "-cf", "-", "."]
        else:  # "./NAME": a name with a leading dash stays a name
            tar = ["tar", "--numeric-owner", "-C", str(source.parent), "-cf", "-",
                   f"./{source.name}"]
        await _pipe(sandbox, tar, ["cp", "-", f"{sandbox.container_id}:{stage}"], what, stage)
        await _run_in_sandbox(engine, _PUBLISH_IN, [dest, stage, kind, source.name],
                              stdin=None, stdout=None, what=what)
    except BaseException:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await sandbox.cli.run("exec", "-u", "0", sandbox.container_id, "rm", "-rf", "--",
                                  stage, timeout=60)
        raise


async def copy_out(sandbox: DockerSandbox, source: str, host: Path) -> None:
    """`docker cp C:PATH - | tar -x` into a host staging dir, then publish to `host`."""
    trimmed = source.rstrip("/") or "/"
    base = posixpath.basename(trimmed)
    host = host.absolute()
    host.parent.mkdir(parents=True, exist_ok=True)
    stage = host.parent / _stage_name()
    stage.mkdir()
    what = f"copy_out {source!r} -> {str(host)!r}"
    try:
        await _pipe(
            sandbox, ["tar", "-xf", "-", "-C", str(stage)],
            ["cp", f"{sandbox.container_id}:{trimmed}", "-"], what, trimmed, docker_first=True,
        )  # fmt: skip
        await anyio.to_thread.run_sync(_publish, stage / base, host)
    finally:
        await anyio.to_thread.run_sync(remove_tree, stage)


async def _pipe(
    sandbox: DockerSandbox,
    tar: list[str],
    docker_args: list[str],
    what: str,
    sandbox_path: str,
    *,
    docker_first: bool = False,
) -> None:
    """Run `tar | docker ...` (or `docker ... | tar`) joined by an OS pipe; typed errors."""
    read_end, write_end = os.pipe()
    docker_cmd = sandbox.cli.argv(*docker_args)
    if docker_first:
        writer, reader, docker_env, tar_env = docker_cmd, tar, sandbox.cli.env, None
    else:
        writer, reader, docker_env, tar_env = tar, docker_cmd, None, sandbox.cli.env
    procs: list[asyncio.subprocess.Process] = []
    try:
        procs.append(await asyncio.create_subprocess_exec(
            *writer, stdin=asyncio.subprocess.DEVNULL, stdout=write_end,
            stderr=asyncio.subprocess.PIPE, env=docker_env,
        ))  # fmt: skip
        procs.append(await asyncio.create_subprocess_exec(
            *reader, stdin=read_end, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE, env=tar_env,
        ))  # fmt: skip
    finally:
        os.close(read_end)
        os.close(write_end)
        if len(procs) == 1:
            procs[0].kill()
            await procs[0].wait()
    try:
        (_, w_err), (_, r_err) = await asyncio.gather(
            procs[0].communicate(), procs[1].communicate()
        )
    finally:
        for proc in procs:  # cancelled: leave no process behind
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
    docker_proc, docker_err = (procs[0], w_err) if docker_first else (procs[1], r_err)
    tar_proc, tar_err = (procs[1], r_err) if docker_first else (procs[0], w_err)
    if docker_proc.returncode != 0:
        text = docker_err.decode(errors="replace").strip()
        if "could not find the file" in text.lower():
            raise TransferError(
                f"{what} failed in sandbox {sandbox.name!r}: "
                f"sandlot: no such file or directory in sandbox: {sandbox_path}"
            )
        if sandbox.cli.is_unreachable(text) or sandbox.cli.is_gone(text):
            raise sandbox.cli.error(text, what=what, container=sandbox.name,
                                    fallback=ProviderError)
        raise TransferError(f"{what} failed in sandbox {sandbox.name!r}: {text}")
    if tar_proc.returncode != 0:
        if not docker_first:  # copy_in: the host tar read the source, which may have changed
            raise host_tar_error(tar_proc.returncode, tar_err.decode(errors="replace"),
                                 Path(tar[tar.index("-C") + 1]), what)
        raise TransferError(f"{what}: host tar failed: {tar_err.decode(errors='replace')}")
