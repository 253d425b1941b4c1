"""The local backend against plain host subprocesses."""

from __future__ import annotations

import json

import sandlot

from . import file_tools_bench
from .core import Measurement
from .measures import (
    Scratch,
    concurrency,
    copy_in_throughput,
    copy_out_throughput,
    exec_latency,
    make_big_file,
    make_small_tree,
    parallel_floor,
    peak_rss,
    raw_shell,
    raw_subprocess,
    raw_subprocess_read,
)


async def run(quick: bool = False) -> list[Measurement]:
    rows: list[Measurement] = []
    async with sandlot.local().session() as sandbox:
        rows.append(
            await exec_latency(
                "local", sandbox, lambda: raw_subprocess_read("sh", "-c", "true"),
                "subprocess sh -c true, output read", rounds=20 if quick else 60,
                target="<= 1.3x",
            )
        )
        rows.append(
            await exec_latency(
                "local", sandbox, lambda: raw_subprocess("sh", "-c", "true"),
                "subprocess sh -c true, output discarded", rounds=20 if quick else 60,
            )
        )
        rows.append(await concurrency("local", sandbox))
        rows.append(await parallel_floor(
            "local", sandbox, lambda: raw_subprocess_read("sh", "-c", "true"),
            "sh -c true, output read"))
        with Scratch() as scratch:
            tree = make_small_tree(scratch, 1000 if quick else 10_000)
            big = make_big_file(scratch, 20 if quick else 200)

            async def raw_tar(src: object, dest: str) -> None:
                await raw_shell(
                    f"mkdir -p '{dest}' && tar -C '{src}' -cf - . | tar -xf - -C '{dest}'"
                )

            async def raw_cp(src: object, dest: str) -> None:
                await raw_shell(f"cp -p '{src}' '{dest}'")

            files = f"{'1,000' if quick else '10,000'} small files"
            mib = f"{'20' if quick else '200'} MiB file"
            rows.append(await copy_in_throughput(
                "local", sandbox, tree, files, raw_tar, "tar | tar x", target="<= 1.1x"))
            rows.append(await copy_in_throughput(
                "local", sandbox, big, mib, raw_cp, "cp -p", target="<= 1.2x"))

            async def raw_tar_out(src: str, dest: object) -> None:
                await raw_shell(f"tar -C '{src}' -cf - . | tar -xf - -C '{dest}'")

            async def raw_cp_out(src: str, dest: object) -> None:
                await raw_shell(f"cp -p '{src}' '{dest}/'")

            rows.append(await copy_out_throughput(
                "local", sandbox, tree, files, raw_tar_out, "tar | tar x", target="<= 1.1x"))
            rows.append(await copy_out_throughput(
                "local", sandbox, big, mib, raw_cp_out, "cp -p", target="<= 1.2x"))
        rows += await file_tools_bench.run_on("local", sandbox, quick=quick)
    rows.append(await peak_rss(json.dumps({"type": "local"}), 0.25 if quick else 1.0))
    return rows
