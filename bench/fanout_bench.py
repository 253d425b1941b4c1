"""Fan-out: wall time of N sandboxes against one, and the orchestrator's memory per sandbox.

Each fan-out makes N workspaces, runs `true` in each and deletes them; the ratio to N = 1 says
how well creation and work overlap (goal: N = 8 within 2x of N = 1 on the fake deployment).
Two fake templates: one whose builds take 1 s (real builds take 10 s to minutes: waiting on
builds is what a fan-out overlaps; the goal row) and one whose builds take no time, where every
second is CPU spent by the processes involved (each fake `coder` call is a Python process, two
cores here), which bounds what any overlap can gain.
Memory is the peak RSS of a child process running the fan-out, N = 16 against N = 1, divided
by the 15 extra sandboxes.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import sandlot
from sandlot import Sandbox, fanout
from sandlot.fanout import Slot
from sandlot.testing import AgentSpec, FakeCoderDeployment

from .core import Measurement
from .measures import Scratch, real_coder

TEMPLATE = "fanout"
INSTANT = "fanout-instant"
BUILD_SECONDS = 1.0
ROOT = Path(__file__).parent.parent


async def _job(sandbox: Sandbox, slot: Slot) -> None:
    await sandbox.exec("true", check=True)


async def _wall(provider: sandlot.IsolatedSandboxProvider, n: int) -> float:
    started = time.perf_counter()
    report = await fanout.run(_job, provider, n=n, max_parallel=n)
    if not report.ok:
        raise RuntimeError(f"fan-out of {n} failed: {report.to_json()}")
    return time.perf_counter() - started


async def _scaling(
    backend: str, provider: sandlot.IsolatedSandboxProvider, sizes: list[int], rounds: int,
    *, target: bool = True,
) -> list[Measurement]:
    times: dict[int, list[float]] = {n: [] for n in [1, *sizes]}
    for _ in range(rounds):  # interleaved, so drift hits every size alike
        for n in times:
            times[n].append(await _wall(provider, n))
    one = statistics.median(times[1])
    return [
        Measurement(
            "fan-out", backend, f"N={n}: create, exec, delete", "N=1", statistics.median(t),
            one, "s", target="<= 2x" if target and n == 8 and "fake" in backend else "",
        )
        for n, t in times.items()
        if n != 1
    ]


async def _peak_rss(config: str, n: int) -> float:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.fanout_rss_probe", config, str(n),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, cwd=ROOT,
    )
    out, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"fan-out RSS probe failed: {err.decode()[-800:]}")
    return float(out.decode().split()[-1])


async def run(quick: bool = False) -> list[Measurement]:
    rounds = 1 if quick else 3
    rows: list[Measurement] = []
    with Scratch() as scratch:
        fake = FakeCoderDeployment(scratch / "coder")
        try:
            fake.add_template(TEMPLATE, agents=[AgentSpec("main")], build_seconds=BUILD_SECONDS)
            fake.add_template(INSTANT, agents=[AgentSpec("main")])
            exe = fake.install(scratch / "bin")
            settings = {
                "type": "coder", "template": TEMPLATE, "on_close": "delete",
                "coder_binary": str(exe), "coder_url": fake.url, "session_token": fake.token,
            }
            sizes = [4, 8] if quick else [4, 8, 16]
            rows += await _scaling(f"coder (fake, {BUILD_SECONDS:g} s builds)",
                                   sandlot.provider_from_config(settings), sizes, rounds)
            instant = sandlot.provider_from_config({**settings, "template": INSTANT})
            rows += await _scaling("coder (fake, instant builds)", instant, sizes, rounds,
                                   target=False)
            config = json.dumps(settings)
            small, large = await _peak_rss(config, 1), await _peak_rss(config, 16)
            rows.append(Measurement(
                "fan-out memory", "coder (fake)", "peak RSS, N=16", "peak RSS, N=1",
                large, small, "MiB", notes=f"{(large - small) / 15:.2f} MiB per extra sandbox",
                extra={"per_sandbox_mib": (large - small) / 15},
            ))
        finally:
            fake.shutdown()
    rows += await _real(rounds)
    return rows


async def _real(rounds: int) -> list[Measurement]:
    """N = 1 and 4 on a real Coder deployment, when tests/realcoder can start one."""
    with real_coder("fanout") as found:
        if found is None:
            return []
        coder, label = found
        provider = sandlot.coder(
            template=coder.template_single, on_close="delete", **coder.access()
        )
        return await _scaling(label, provider, [4], rounds)
