"""How often Coder's tailnet stalls a large upload on a fresh SSH connection (adr/0029).

    PYTHONPATH=src:. python -m tests.realcoder.stall_probe --sessions 80 --load 3
    PYTHONPATH=src:. python -m tests.realcoder.stall_probe --sessions 80 --load 3 --pause 2

Each round creates a workspace (a new agent, a new `coder ssh --stdio` connection), runs one
small command, optionally waits `--pause` seconds, then pipes 1 MiB into `sha256sum`. A round
whose upload does not finish is counted as stalled (sandlot's keepalive ends it as
ConnectionLostError). `--load N` runs N busy loops beside it, as a loaded CI machine would.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import os
import subprocess
import time

import sandlot
from sandlot.errors import ConnectionLostError

from .harness import RealCoder, cached_binary


async def probe(coder: RealCoder, sessions: int, pause: float) -> list[float | None]:
    provider = sandlot.coder(
        template=coder.template_single, on_close="delete", keepalive_interval=3,
        keepalive_count_max=2, **coder.access(),
    )  # fmt: skip
    times: list[float | None] = []
    for round_no in range(sessions):
        async with provider.session() as box:
            await box.exec("seq 100", check=True)
            await asyncio.sleep(pause)
            payload = os.urandom(1 << 20)
            started = time.monotonic()
            try:
                result = await box.exec("sha256sum", stdin=payload, timeout=60, check=True)
            except ConnectionLostError:
                times.append(None)
                print(f"round {round_no}: stalled", flush=True)
                continue
            assert result.stdout.split()[0] == hashlib.sha256(payload).hexdigest()
            times.append(time.monotonic() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--pause", type=float, default=0.0)
    parser.add_argument("--load", type=int, default=0, help="busy loops beside the probe")
    args = parser.parse_args()
    binary = cached_binary()
    if binary is None:
        raise SystemExit("no real Coder build cached: run scripts/build-coder.sh")
    loops = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(args.load)]
    try:
        with RealCoder(binary) as coder:
            times = asyncio.run(probe(coder, args.sessions, args.pause))
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    done = sorted(t for t in times if t is not None)
    stalled = len(times) - len(done)
    median = done[len(done) // 2] * 1000 if done else float("nan")
    print(f"{stalled} of {len(times)} uploads stalled (pause {args.pause} s, load {args.load});"
          f" median of the rest {median:.0f} ms")


if __name__ == "__main__":
    main()
