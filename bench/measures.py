"""Measurements that work on any sandbox; each backend module supplies its raw baselines."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

from sandlot import Sandbox

from .core import Measurement, interleaved

Raw = Callable[[], Awaitable[object]]


async def exec_latency(
    backend: str, sandbox: Sandbox, raw: Raw, raw_name: str, *, rounds: int = 40, target: str = ""
) -> Measurement:
    async def subject() -> None:
        await sandbox.exec("true", check=True)

    s, b = await interleaved(subject, raw, rounds=rounds)
    return Measurement("exec latency", backend, "exec('true')", raw_name, s, b, "s", target)


async def concurrency(backend: str, sandbox: Sandbox, *, n: int = 32) -> Measurement:
    async def one() -> None:
        await sandbox.exec("true", check=True)

    async def parallel() -> None:
        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(one)

    s, b = await interleaved(parallel, one, rounds=6)
    return Measurement(
        "concurrency", backend, f"{n} parallel execs", "1 exec", s, b, "s",
        target=f"< {n}x (serialised)",
    )


async def parallel_floor(
    backend: str, sandbox: Sandbox, bare: Raw, bare_name: str, *, n: int = 32, rounds: int = 6,
    command: str | list[str] = "true",
) -> Measurement:
    """`n` sandlot execs of `command` in parallel against `n` bare commands of the transport
    in parallel."""

    async def run(one: Raw) -> None:
        await one()

    async def many(one: Raw) -> None:
        async with anyio.create_task_group() as group:
            for _ in range(n):
                group.start_soon(run, one)

    async def subject_one() -> None:
        await sandbox.exec(command, check=True)

    s, b = await interleaved(
        lambda: many(subject_one), lambda: many(bare), rounds=rounds, warmup=1
    )
    what = f"{n} parallel execs" if command == "true" else f"{n} parallel exec({command!r})"
    return Measurement(
        "exec floor", backend, what, f"{n} parallel {bare_name}", s, b, "s", target="<= 1.2x",
    )


def make_small_tree(root: Path, files: int = 10_000) -> Path:
    """`files` files of 200 bytes in 100 directories."""
    tree = root / "tree"
    for i in range(files):
        sub = tree / f"d{i % 100:03d}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"f{i:05d}.txt").write_bytes(os.urandom(100).hex().encode())
    return tree


def make_big_file(root: Path, mib: int = 200) -> Path:
    path = root / "big.bin"
    with path.open("wb") as handle:
        for _ in range(mib):
            handle.write(os.urandom(1 << 20))
    return path


async def copy_in_throughput(
    backend: str,
    sandbox: Sandbox,
    source: Path,
    label: str,
    raw: Callable[[Path, str], Awaitable[object]],
    raw_name: str,
    *,
    rounds: int = 3,
    target: str = "",
) -> Measurement:
    """copy_in of `source` vs the backend's raw copy, each into a fresh destination."""
    counter = iter(range(1_000_000))

    async def fresh_dest() -> str:
        dest = f"{sandbox.worktree}/bench-copy-{next(counter)}"
        return dest

    async def subject() -> None:
        dest = await fresh_dest()
        await sandbox.copy_in(source, dest)
        await sandbox.exec(["rm", "-rf", dest], check=True)

    async def baseline() -> None:
        dest = await fresh_dest()
        await raw(source, dest)
        await sandbox.exec(["rm", "-rf", dest], check=True)

    s, b = await interleaved(subject, baseline, rounds=rounds, warmup=1)
    size = _size(source)
    return Measurement(
        "copy_in", backend, f"copy_in {label}", raw_name, s, b, "s",
        notes=f"{size / (1 << 20) / s:.0f} MiB/s vs {size / (1 << 20) / b:.0f} MiB/s",
        target=target,
    )


async def copy_out_throughput(
    backend: str,
    sandbox: Sandbox,
    source: Path,
    label: str,
    raw: Callable[[str, Path], Awaitable[object]],
    raw_name: str,
    *,
    rounds: int = 3,
    target: str = "",
) -> Measurement:
    """copy_out of `source` (copied into the sandbox once) vs the backend's raw copy out, each
    into a fresh host directory."""
    inside = f"{sandbox.worktree}/bench-out-{source.name}"
    await sandbox.copy_in(source, inside)
    scratch = Path(tempfile.mkdtemp(prefix="sandlot-bench-out-"))
    counter = iter(range(1_000_000))

    async def subject() -> None:
        dest = scratch / f"o{next(counter)}"
        await sandbox.copy_out(inside, dest)
        await anyio.to_thread.run_sync(_remove, dest)

    async def baseline() -> None:
        dest = scratch / f"o{next(counter)}"
        dest.mkdir()
        await raw(inside, dest)
        await anyio.to_thread.run_sync(_remove, dest)

    try:
        s, b = await interleaved(subject, baseline, rounds=rounds, warmup=1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        await sandbox.exec(["rm", "-rf", inside], check=True)
    size = _size(source)
    return Measurement(
        "copy_out", backend, f"copy_out {label}", raw_name, s, b, "s",
        notes=f"{size / (1 << 20) / s:.0f} MiB/s vs {size / (1 << 20) / b:.0f} MiB/s",
        target=target,
    )


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


async def peak_rss(backend_json: str, gib: float = 1.0) -> Measurement:
    """Peak RSS of a process streaming `gib` GiB through exec, vs one streaming a quarter of
    that: a bounded capture keeps the same peak whatever the stream's length."""

    def run(nbytes: int) -> float:
        out = subprocess.run(
            [sys.executable, "-m", "bench.rss_probe", backend_json, str(nbytes)],
            capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent,
        )
        return float(out.stdout.strip().splitlines()[-1])

    idle = await anyio.to_thread.run_sync(run, 0)
    quarter = await anyio.to_thread.run_sync(run, int(gib * (1 << 30)) // 4)
    busy = await anyio.to_thread.run_sync(run, int(gib * (1 << 30)))
    import json

    backend = json.loads(backend_json)["type"]
    backend = "coder (fake)" if backend == "coder" else backend
    return Measurement(
        "memory", backend, f"peak RSS streaming {gib:g} GiB",
        f"peak RSS streaming {gib / 4:g} GiB", busy, quarter, "MiB",
        target="~1x (bounded capture)", notes=f"running 'true': {idle:.0f} MiB",
    )


async def raw_subprocess(*argv: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    if await proc.wait() != 0:
        raise RuntimeError(f"baseline command failed: {argv}")


async def raw_subprocess_read(*argv: str) -> None:
    """The floor of a command whose output is read: a subprocess whose stdout and stderr are
    pipes read to their end (what any exec that returns output must do at the least)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"baseline command failed: {argv}")


async def raw_shell(line: str) -> None:
    await raw_subprocess("sh", "-c", line)


class Scratch:
    """A host temp dir for bench inputs, removed at the end."""

    def __enter__(self) -> Path:
        self.path = Path(tempfile.mkdtemp(prefix="sandlot-bench-"))
        return self.path

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def now() -> float:
    return time.time()


@contextlib.contextmanager
def real_coder(suite: str) -> Iterator[tuple[Any, str] | None]:
    """A real Coder deployment from tests/realcoder and its label, or None (said on stderr)
    when this machine has no cached release build or no PostgreSQL."""
    try:
        from tests.realcoder.harness import RealCoder, cached_binary
        from tests.realcoder.postgres import find_pg_bin
    except ImportError:
        yield None
        return
    binary = cached_binary()
    if binary is None or find_pg_bin() is None:
        print(f"bench: {suite}: no real Coder build cached; fake deployment only",
              file=sys.stderr)
        yield None
        return
    coder = RealCoder(binary)
    coder.__enter__()  # on this thread: the harness's children die with their thread
    try:
        yield coder, f"coder (real {binary.parent.name})"
    finally:
        coder.__exit__(None, None, None)
