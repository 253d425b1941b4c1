"""The docker backend next to raw `docker exec` / `docker cp` and next to the local backend.

Runs on the private engine of tests/docker_engine.py (started and stopped here). Every row is
a ratio of two things measured interleaved in the same run:

    python -m bench --only docker          # with the other suites' table
    python -m bench.docker_bench [--quick] # this suite alone: bench/results/docker.{json,md}
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import anyio

import sandlot
from sandlot.backends.docker import DockerOptions, DockerProvider, DockerSandbox
from tests import docker_engine

from . import file_tools_bench
from .core import Measurement, Unavailable, format_table, interleaved
from .measures import (
    Scratch,
    copy_out_throughput,
    exec_latency,
    make_big_file,
    make_small_tree,
    parallel_floor,
    raw_shell,
    raw_subprocess,
)

RESULTS = Path(__file__).parent / "results"


def _engine() -> docker_engine.DockerEngine:
    missing = docker_engine.missing_components()
    if missing:
        raise Unavailable(f"missing {missing}; {docker_engine.INSTALL_HINT}")
    try:
        return docker_engine.DockerEngine().start()
    except docker_engine.EngineUnavailable as exc:
        raise Unavailable(str(exc)) from exc


async def _copy_pair(
    name: str,
    docker_box: DockerSandbox,
    other: sandlot.Sandbox,
    other_name: str,
    source: Path,
    label: str,
    rounds: int,
) -> Measurement:
    counter = iter(range(1_000_000))

    def copier(box: sandlot.Sandbox) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            dest = f"{box.worktree}/bench-{next(counter)}"
            await box.copy_in(source, dest)
            await box.exec(["rm", "-rf", dest], check=True)

        return run

    s, b = await interleaved(copier(docker_box), copier(other), rounds=rounds, warmup=1)
    return Measurement("copy_in", name, f"copy_in {label}", other_name, s, b, "s",
                       notes=_rate(source, s, b))


def _rate(source: Path, s: float, b: float) -> str:
    size = sum(p.stat().st_size for p in ([source] if source.is_file() else source.rglob("*"))
               if p.is_file())
    return f"{size / (1 << 20) / s:.0f} MiB/s vs {size / (1 << 20) / b:.0f} MiB/s"


async def run(quick: bool = False) -> list[Measurement]:
    engine = _engine()
    try:
        return await _helper_rows(engine, quick) + await _measure(engine, quick)
    finally:
        engine.stop()


def python_provider(engine: docker_engine.DockerEngine, *, helper: bool) -> DockerProvider:
    """A container with python3 (the toolchain image: the host's /usr lent read-only), so the
    session helper can run in it; `helper=False` turns it off (today's `docker exec` path)."""
    fields: dict[str, object] = {
        "image": engine.toolchain_image(), "on_close": "delete", "docker_host": engine.host,
        "mounts": engine.toolchain_mounts(), "env": dict(docker_engine.TOOLCHAIN_ENV),
    }
    if "session_helper" in DockerOptions.model_fields:
        fields["session_helper"] = helper
    elif helper:
        raise Unavailable("this sandlot has no session helper (DockerOptions.session_helper)")
    return DockerOptions.model_validate(fields).build()


async def _helper_rows(engine: docker_engine.DockerEngine, quick: bool) -> list[Measurement]:
    """Docker commands over the session helper against local ones (issue 28): one exec, 32 in
    parallel, and what the helper's start adds to a sandbox's first command."""
    rows: list[Measurement] = []
    rounds = 15 if quick else 40
    helper = python_provider(engine, helper=True)
    plain = python_provider(engine, helper=False)
    async with helper.session() as box, plain.session() as off, \
            sandlot.local().session() as local_box:

        async def local_exec() -> None:
            await local_box.exec("true", check=True)

        s, b = await interleaved(lambda: box.exec("true", check=True), local_exec,
                                 rounds=rounds)
        rows.append(Measurement("exec latency", "docker (helper)", "exec('true')",
                                "local backend exec('true')", s, b, "s", target="<= 3x"))
        s, b = await interleaved(lambda: off.exec("true", check=True), local_exec,
                                 rounds=rounds)
        rows.append(Measurement("exec latency", "docker (no helper)", "exec('true')",
                                "local backend exec('true')", s, b, "s",
                                notes="session_helper=False: one docker exec per command"))

        starts: list[float] = []
        for _ in range(2 if quick else 4):
            async with helper.session() as fresh:
                began = time.perf_counter()
                await fresh.exec("true", check=True)
                starts.append(time.perf_counter() - began)
        start = sorted(starts)[len(starts) // 2]
        warm = await _median_exec(box, rounds)
        rows.append(Measurement("exec latency", "docker (helper)",
                                "first exec('true') (starts the helper)",
                                "exec('true') once it runs", start, warm, "s",
                                notes="the helper's start, paid once per sandbox"))

        async def parallel(sandbox: sandlot.Sandbox) -> None:
            async with anyio.create_task_group() as group:
                for _ in range(32):
                    group.start_soon(_true, sandbox)

        s, b = await interleaved(lambda: parallel(box), lambda: parallel(local_box),
                                 rounds=3 if quick else 8, warmup=1)
        rows.append(Measurement("exec floor", "docker (helper)", "32 parallel execs",
                                "32 parallel local backend execs", s, b, "s",
                                target="<= 1.2x (+ helper start)",
                                notes=f"helper start {start * 1000:.0f} ms, paid once"))
        s, b = await interleaved(lambda: parallel(off), lambda: parallel(local_box),
                                 rounds=3 if quick else 6, warmup=1)
        rows.append(Measurement("exec floor", "docker (no helper)", "32 parallel execs",
                                "32 parallel local backend execs", s, b, "s"))
    return rows


async def _true(sandbox: sandlot.Sandbox) -> None:
    await sandbox.exec("true", check=True)


async def _median_exec(sandbox: sandlot.Sandbox, rounds: int) -> float:
    times: list[float] = []
    for _ in range(rounds):
        began = time.perf_counter()
        await _true(sandbox)
        times.append(time.perf_counter() - began)
    return sorted(times)[len(times) // 2]


async def _measure(engine: docker_engine.DockerEngine, quick: bool) -> list[Measurement]:
    host = engine.host
    image = engine.busybox_image()
    rows: list[Measurement] = []
    docker_bin = "docker"
    provider = sandlot.docker(image, on_close="delete", docker_host=host)

    async def raw_run_rm() -> None:
        await raw_shell(
            f"c=$({docker_bin} --host {host} run -d --init --network none --entrypoint sh "
            f"{image} -c 'sleep 3600') && {docker_bin} --host {host} rm -f \"$c\" >/dev/null"
        )

    async def session() -> None:
        async with provider.session() as box:
            del box

    s, b = await interleaved(session, raw_run_rm, rounds=3 if quick else 8, warmup=1)
    rows.append(Measurement("create+close", "docker", "session() create+close",
                            "docker run -d + rm -f", s, b, "s", target="~1x"))

    async with provider.session() as box, sandlot.local().session() as local_box:
        assert isinstance(box, DockerSandbox)
        cid = box.container_id
        dx = f"{docker_bin} --host {host}"

        async def raw_exec() -> None:  # the floor: the docker client itself, no shell around it
            await raw_subprocess(docker_bin, "--host", host, "exec", cid, "true")

        rounds = 15 if quick else 40
        rows.append(await exec_latency("docker", box, raw_exec, "docker exec C true",
                                       rounds=rounds, target="<= 1.05x"))
        rows.append(await parallel_floor("docker", box, raw_exec, "docker exec C true",
                                         rounds=3 if quick else 6))

        async def local_exec() -> None:
            await local_box.exec("true", check=True)

        s, b = await interleaved(lambda: box.exec("true", check=True), local_exec, rounds=rounds)
        rows.append(Measurement("exec latency", "docker", "exec('true')",
                                "local backend exec('true')", s, b, "s",
                                notes="the price of a container round trip"))

        with Scratch() as scratch:
            mib = 20 if quick else 200
            files = 1000 if quick else 10_000
            inputs = [
                (make_big_file(scratch, mib), f"{mib} MiB file"),
                (make_small_tree(scratch, files), f"{files:,} small files"),
            ]
            for source, label in inputs:
                counter = iter(range(1_000_000))

                async def ours(src: Path = source, counter: Iterator[int] = counter) -> None:
                    dest = f"{box.worktree}/b-{next(counter)}"
                    await box.copy_in(src, dest)
                    await box.exec(["rm", "-rf", dest], check=True)

                async def docker_cp(src: Path = source, counter: Iterator[int] = counter) -> None:
                    dest = f"{box.worktree}/b-{next(counter)}"
                    await box.exec(["mkdir", "-p", dest], check=True)
                    what = f"-C '{src}' ." if src.is_dir() else f"-C '{src.parent}' '{src.name}'"
                    await raw_shell(f"tar {what} -cf - | {dx} cp - {cid}:'{dest}'")
                    await box.exec(["rm", "-rf", dest], check=True)

                async def exec_tar(src: Path = source, counter: Iterator[int] = counter) -> None:
                    dest = f"{box.worktree}/b-{next(counter)}"
                    what = f"-C '{src}' ." if src.is_dir() else f"-C '{src.parent}' '{src.name}'"
                    await raw_shell(f"tar {what} -cf - | {dx} exec -i {cid} sh -c "
                                    f"'mkdir -p {dest} && tar -xf - -C {dest}'")
                    await box.exec(["rm", "-rf", dest], check=True)

                r = 2 if quick else 4
                s, b = await interleaved(ours, docker_cp, rounds=r, warmup=1)
                rows.append(Measurement("copy_in", "docker", f"copy_in {label}",
                                        "tar | docker cp -", s, b, "s",
                                        notes=_rate(source, s, b)))
                s, b = await interleaved(ours, exec_tar, rounds=r, warmup=1)
                rows.append(Measurement("copy_in", "docker", f"copy_in {label}",
                                        "tar | docker exec -i tar x", s, b, "s",
                                        target="<= 1.1x" if source.is_dir() else "",
                                        notes=_rate(source, s, b)))
                rows.append(await _copy_pair("docker", box, local_box, "local backend copy_in",
                                             source, label, r))

            tree = inputs[1][0]

            async def exec_tar_out(src: str, dest: Path) -> None:
                await raw_shell(f"{dx} exec {cid} tar -C '{src}' -cf - . | tar -xf - -C '{dest}'")

            async def docker_cp_out(src: str, dest: Path) -> None:
                await raw_shell(f"{dx} cp {cid}:'{src}/.' - | tar -xf - -C '{dest}'")

            r = 2 if quick else 4
            rows.append(await copy_out_throughput(
                "docker", box, tree, f"{files:,} small files", exec_tar_out,
                "docker exec tar c | tar x", rounds=r, target="<= 1.1x"))
            rows.append(await copy_out_throughput(
                "docker", box, tree, f"{files:,} small files", docker_cp_out,
                "docker cp C:path - | tar x", rounds=r))
            big = inputs[0][0]
            await box.copy_in(big, f"{box.worktree}/big.bin")
            out_counter = iter(range(1_000_000))

            async def ours_out() -> None:
                await box.copy_out(f"{box.worktree}/big.bin",
                                   scratch / f"o{next(out_counter)}" / "big.bin")

            async def cp_out() -> None:
                dest = scratch / f"o{next(out_counter)}"
                dest.mkdir()
                await raw_shell(f"{dx} cp {cid}:{box.worktree}/big.bin - | tar -xf - -C '{dest}'")

            s, b = await interleaved(ours_out, cp_out, rounds=2 if quick else 4, warmup=1)
            rows.append(Measurement("copy_out", "docker", f"copy_out {mib} MiB file",
                                    "docker cp C:path - | tar x", s, b, "s",
                                    notes=_rate(big, s, b)))
    # The file tools need python3 for the session helper: the toolchain image has the host's.
    toolchain = sandlot.docker(engine.toolchain_image(), on_close="delete", docker_host=host,
                               mounts=list(engine.toolchain_mounts()),
                               env=dict(docker_engine.TOOLCHAIN_ENV))
    async with toolchain.session() as box:
        rows += await file_tools_bench.run_on("docker", box, quick=quick)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.docker_bench")
    parser.add_argument("--quick", action="store_true", help="small inputs, few rounds")
    args = parser.parse_args()
    started = time.time()
    rows = asyncio.run(run(args.quick))
    table = format_table(rows)
    print(table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "docker-quick" if args.quick else "docker"
    (RESULTS / f"{stem}.md").write_text(table + "\n")
    (RESULTS / f"{stem}.json").write_text(json.dumps({
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1),
        "load_avg_at_end": os.getloadavg(),
        "measurements": [r.as_dict() for r in rows],
    }, indent=2) + "\n")  # fmt: skip
    print(f"wrote {RESULTS / (stem + '.json')}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
