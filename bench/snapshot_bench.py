"""Fork and snapshots against what they replace, in one run (issue 31).

- fork: `sandlot.fork(source, n=8)` of a sandbox whose worktree holds 200 MiB in 10,000 files,
  against 8 fresh creates each followed by `copy_in` of the same tree (4 at a time both
  ways), closing included. Local, docker and the fake Coder deployment. Goal: <= 0.5x on
  local and docker.
- snapshot / restore of that tree in a sandbox (local, docker with the host's toolchain
  mounted for git, fake Coder) against `tar c | tar x` of it in the same sandbox (the restore
  rewrites the whole tree: it was emptied first), median of 3 alternating rounds, each run
  after an untimed clean-up and `sync` (without them the tar pipe took 0.5-9 s, depending on
  how much write-back the runs before it had left). Goal: <= 1.5x.

    python -m bench --only snapshot     # or: python -m bench.snapshot_bench [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

import sandlot
from sandlot import IsolatedSandboxProvider, Sandbox
from sandlot.testing import AgentSpec, FakeCoderDeployment

from .core import Measurement, Unavailable, format_table

FORKS = 8
PARALLEL = 4


def make_tree(root: Path, files: int, total_mib: int) -> Path:
    """`files` files of incompressible bytes, `total_mib` MiB in all, 100 per directory."""
    size = (total_mib << 20) // files
    root.mkdir(parents=True)
    for i in range(files):
        folder = root / f"d{i // 100:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i:05d}.bin").write_bytes(os.urandom(size))
    return root


async def _timed(func: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await func()
    return time.perf_counter() - started


async def _pairs(subject: Callable[[], Awaitable[object]],
                 baseline: Callable[[], Awaitable[object]], rounds: int,
                 setup: tuple[Callable[[], Awaitable[object]], Callable[[], Awaitable[object]]]
                 | None = None) -> tuple[float, float]:
    """Median of `rounds` alternating runs (no warm-up: each run is seconds long). `setup`
    (the subject's, the baseline's) runs before each timed run, untimed: removing what the
    previous run wrote (10,000 files for the tar pipe, one pack for a snapshot) is part of
    neither, and a `sync` there starts each run with no write-back of the last one pending."""
    subject_times: list[float] = []
    baseline_times: list[float] = []
    for i in range(rounds):
        order = [(subject, subject_times, 0), (baseline, baseline_times, 1)]
        if i % 2:
            order.reverse()
        for func, sink, side in order:
            if setup is not None:
                await setup[side]()
            sink.append(await _timed(func))
    return sorted(subject_times)[rounds // 2], sorted(baseline_times)[rounds // 2]


async def fork_pair(backend: str, provider: IsolatedSandboxProvider, tree: Path,
                    rounds: int) -> Measurement:
    async with provider.session() as source:
        await source.copy_in(tree, source.worktree)

        async def forked() -> None:
            async with sandlot.fork(source, n=FORKS, max_parallel=PARALLEL) as forks:
                assert len(forks) == FORKS

        async def fresh() -> None:
            limit = anyio.CapacityLimiter(PARALLEL)

            async def one() -> None:
                async with limit, provider.session() as made:
                    await made.copy_in(tree, made.worktree)

            async with anyio.create_task_group() as group:
                for _ in range(FORKS):
                    group.start_soon(one)

        s, b = await _pairs(forked, fresh, rounds)
    return Measurement(
        group="fork", backend=backend, subject=f"fork n={FORKS}",
        baseline=f"{FORKS} creates + copy_in", subject_value=s, baseline_value=b, unit="s",
        target="<= 0.5x" if backend in ("local", "docker") else "",
    )


async def snapshot_pairs(sandbox: Sandbox, tree: Path, rounds: int) -> list[Measurement]:
    work = f"{sandbox.worktree}/tree"
    await sandbox.copy_in(tree, work)

    async def clean() -> None:  # a first snapshot: no store yet
        await sandbox.exec(f"rm -rf /tmp/bench-tar {sandbox.worktree}/.sandlot && sync",
                           check=True)

    async def take() -> None:
        await sandbox.snapshot(paths=[work])

    async def tar_copy() -> None:
        await sandbox.exec(f"mkdir /tmp/bench-tar && "
                           f"tar cf - -C {work} . | tar xf - -C /tmp/bench-tar", check=True)

    take_s, take_b = await _pairs(take, tar_copy, rounds, setup=(clean, clean))
    snap = await sandbox.snapshot(paths=[work])

    async def again() -> None:  # the usual case: a snapshot after an agent's small step
        await sandbox.exec(f"date > {work}/d000/changed", check=True)
        await sandbox.snapshot(paths=[work])

    async def clean_tar() -> None:
        await sandbox.exec("rm -rf /tmp/bench-tar && sync", check=True)

    again_s, again_b = await _pairs(again, tar_copy, rounds, setup=(clean_tar, clean_tar))

    async def emptied() -> None:  # the restore rewrites the whole tree, as tar writes a copy
        await sandbox.exec(f"rm -rf {work}/d* {work}/.[!.]*; sync", check=True)

    async def restore() -> None:
        await sandbox.restore(snap)

    back_s, back_b = await _pairs(restore, tar_copy, rounds, setup=(emptied, clean_tar))
    await sandbox.exec("rm -rf /tmp/bench-tar")
    return [
        Measurement(group="snapshot", backend=sandbox.provider, subject="snapshot (first)",
                    baseline="tar c | tar x", subject_value=take_s, baseline_value=take_b,
                    unit="s", target="<= 1.5x"),
        Measurement(group="snapshot", backend=sandbox.provider, subject="snapshot (1 file new)",
                    baseline="tar c | tar x", subject_value=again_s, baseline_value=again_b,
                    unit="s"),
        Measurement(group="snapshot", backend=sandbox.provider, subject="restore (whole tree)",
                    baseline="tar c | tar x", subject_value=back_s, baseline_value=back_b,
                    unit="s", target="<= 1.5x"),
    ]


@asynccontextmanager
async def _fake_coder(tmp: Path) -> AsyncIterator[IsolatedSandboxProvider]:
    fake = FakeCoderDeployment(tmp / "deployment")
    try:
        fake.add_template("bench", agents=[AgentSpec("main", directory="project")])
        exe = fake.install(tmp / "bin")
        yield sandlot.coder(template="bench", on_close="delete", coder_binary=str(exe),
                            coder_url=fake.url, session_token=fake.token)
    finally:
        await anyio.to_thread.run_sync(fake.shutdown)


async def run(quick: bool = False) -> list[Measurement]:
    # Snapshot pairs: 3 rounds, median (seconds each); fork pairs: one (a minute each).
    files, mib, rounds = (1_000, 20, 1) if quick else (10_000, 200, 3)
    rows: list[Measurement] = []
    with tempfile.TemporaryDirectory(prefix="sandlot-bench-snap-") as scratch:
        tmp = Path(scratch)
        tree = await anyio.to_thread.run_sync(make_tree, tmp / "tree", files, mib)
        async with sandlot.local().session() as sandbox:
            rows += await snapshot_pairs(sandbox, tree, rounds)
        rows.append(await fork_pair("local", sandlot.local(), tree, 1))
        from tests import docker_engine

        try:
            missing = docker_engine.missing_components()
            if missing:
                raise Unavailable(f"missing {missing}")
            engine = docker_engine.DockerEngine().start()
        except (Unavailable, docker_engine.EngineUnavailable) as exc:
            print(f"docker fork skipped: {exc}", file=sys.stderr)
        else:
            try:
                provider = sandlot.docker(engine.busybox_image(), docker_host=engine.host,
                                          on_close="delete")
                rows.append(await fork_pair("docker", provider, tree, 1))
                # busybox has no git: the snapshot rows use the host's toolchain, mounted.
                with_git = sandlot.docker(engine.toolchain_image(), docker_host=engine.host,
                                          mounts=[*engine.toolchain_mounts()], on_close="delete",
                                          env=dict(docker_engine.TOOLCHAIN_ENV))
                async with with_git.session() as sandbox:
                    rows += await snapshot_pairs(sandbox, tree, rounds)
            finally:
                engine.stop()
        async with _fake_coder(tmp / "coder") as coder:
            rows.append(await fork_pair("fake_coder", coder, tree, 1))
            async with coder.session() as sandbox:
                rows += await snapshot_pairs(sandbox, tree, rounds)
        shutil.rmtree(tree, ignore_errors=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    rows = asyncio.run(run(args.quick))
    print(format_table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps([r.as_dict() for r in rows], indent=2) + "\n")


if __name__ == "__main__":
    main()
