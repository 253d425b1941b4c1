"""The HTTP sandbox server against calling `run_code` directly, for a trivial snippet.

Both sides run the same snippet in the same kind of sandbox (local, in the same mode); the
server is a real `sandlot serve` process on loopback, reached with keep-alive connections.

* latency: median seconds of one `POST /execute` vs one `run_code` call (interleaved);
* throughput: wall time per request when `CONCURRENCY` callers keep the server's execution
  slots busy, vs the same number of concurrent `run_code` calls; requests/s are in `extra`.

    python -m bench.server_bench [--quick]     # table + bench/results/server.{json,md}
    python -m bench --only server              # as part of the whole bench
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import httpx

import sandlot
from sandlot.modes import run_code

from .core import Measurement, Unavailable, format_table, interleaved

CONCURRENCY = 4
#: mode -> a snippet that does nothing worth measuring.
SNIPPETS = {"shell": ":", "python": "pass"}


@contextmanager
def serve(mode: str) -> Iterator[str]:
    """`sandlot serve` as a subprocess; yields its URL, stops it (SIGTERM) afterwards."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandlot", "serve", "--port", "0", "--mode", mode,
         "--max-concurrency", str(CONCURRENCY), "--log-level", "warning"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        for line in proc.stderr:
            if "listening on " in line:
                yield line.split("listening on ", 1)[1].split()[0]
                break
            if time.monotonic() > deadline:
                raise Unavailable("sandlot serve did not start within 120 s")
        else:
            raise Unavailable(f"sandlot serve exited with {proc.wait()} before listening")
    finally:
        proc.terminate()
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


async def _per_request(call: Callable[[], Awaitable[object]], total: int) -> float:
    """Seconds per request when CONCURRENCY callers share `total` calls."""
    remaining = total

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await call()

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(CONCURRENCY):
            group.start_soon(worker)
    return (time.perf_counter() - started) / total


async def measure_mode(mode: str, quick: bool) -> list[Measurement]:
    snippet = SNIPPETS[mode]
    rounds = 10 if quick else 40
    total = 20 if quick else 120
    with serve(mode) as url:
        async with (
            sandlot.local().session() as sandbox,
            httpx.AsyncClient(base_url=url, timeout=120) as client,
        ):

            async def over_http() -> None:
                response = await client.post("/execute", json={"code": snippet})
                if response.status_code != 200 or response.json()["exit_code"] != 0:
                    raise RuntimeError(f"server answered {response.status_code}: {response.text}")

            async def direct() -> None:
                result = await run_code(sandbox, snippet, mode=mode)
                if result.exit_code != 0:
                    raise RuntimeError(f"run_code failed: {result.stderr}")

            http_s, direct_s = await interleaved(over_http, direct, rounds=rounds)
            http_c = await _per_request(over_http, total)
            direct_c = await _per_request(direct, total)
    return [
        Measurement(
            group="server latency",
            backend=f"local/{mode}",
            subject="POST /execute",
            baseline="run_code()",
            subject_value=http_s * 1000,
            baseline_value=direct_s * 1000,
            unit="ms",
            notes=f"median of {rounds}, interleaved; snippet {snippet!r}",
        ),
        Measurement(
            group="server throughput",
            backend=f"local/{mode}",
            subject=f"POST /execute x{CONCURRENCY}",
            baseline=f"run_code() x{CONCURRENCY}",
            subject_value=http_c * 1000,
            baseline_value=direct_c * 1000,
            unit="ms/req",
            notes=f"{total} requests by {CONCURRENCY} concurrent callers",
            extra={
                "requests_per_s": round(1 / http_c, 1),
                "run_code_per_s": round(1 / direct_c, 1),
            },
        ),
    ]


async def run(quick: bool = False) -> list[Measurement]:
    """The suite entry point of `python -m bench`."""
    rows: list[Measurement] = []
    for mode in SNIPPETS:
        rows += await measure_mode(mode, quick)
    return rows


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results")
    args = parser.parse_args(argv)
    started = time.time()
    load = os.getloadavg()
    rows = await run(args.quick)
    table = format_table(rows)
    rps = "\n".join(
        f"{r.backend}: {r.extra['requests_per_s']} req/s over HTTP, "
        f"{r.extra['run_code_per_s']} run_code/s direct"
        for r in rows
        if r.extra
    )
    rps += f"\n(load average at start: {load[0]:.1f} on {os.cpu_count()} CPUs)"
    print(table + "\n\n" + rps)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = "server-quick" if args.quick else "server"
    report = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1),
        "machine": {"cpus": os.cpu_count(), "load_avg_at_start": load},
        "measurements": [r.as_dict() for r in rows],
    }
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(table + "\n\n" + rps + "\n")
    print(f"wrote {args.out / stem}.json and .md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
