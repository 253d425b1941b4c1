"""`python -m bench`: every measurement, one table of ratios, JSON and a PNG chart.

    python -m bench                 # everything available on this machine
    python -m bench --quick         # smaller inputs, fewer rounds (a smoke run of the bench)
    python -m bench --only local    # some suites only (written to results/local.json)
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from .core import Measurement, Unavailable, format_table

#: suite name -> module with `async def run(quick: bool) -> list[Measurement]`.
SUITES: dict[str, str] = {
    "local": "bench.local_bench",
    "fake_coder": "bench.fake_coder_bench",
    "docker": "bench.docker_bench",
    "coder": "bench.coder_exec",
    "server": "bench.server_bench",
    "coder_transfer": "bench.coder_transfer",
    "verify": "bench.verify_bench",
    "fanout": "bench.fanout_bench",
    "git": "bench.git_bench",
    "mcp": "bench.mcp_bench",
    "forward": "bench.forward_bench",
    "deepagents": "bench.deepagents_bench",
    "snapshot": "bench.snapshot_bench",
    "template": "bench.template_bench",
    "lsp": "bench.lsp_bench",
    "openai_agents": "bench.openai_agents_bench",
    "feedback": "bench.feedback_bench",
    "observability": "bench.observability_bench",
    "file_tools": "bench.file_tools_bench",
}

RESULTS = Path(__file__).parent / "results"


def machine() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
    }
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        info["memory_gib"] = round(pages / (1 << 30), 1)
        info["load_avg_at_start"] = os.getloadavg()
    except (ValueError, OSError):
        pass
    return info


def chart(rows: list[Measurement], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{r.backend}: {r.subject} / {r.baseline}" for r in rows]
    ratios = [r.ratio for r in rows]
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(rows) + 1.5))
    ax.barh(labels, ratios, color=["#4c72b0" if x <= 1 else "#dd8452" for x in ratios])
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("ratio sandlot / baseline (log scale; < 1 is faster or smaller)")
    for y, ratio in enumerate(ratios):
        ax.text(ratio, y, f" {ratio:.2f}x", va="center", fontsize=8)
    ax.set_title("sandlot bench: ratios measured side by side in one run")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help=f"comma-separated suites: {', '.join(SUITES)}")
    parser.add_argument("--quick", action="store_true", help="small inputs, few rounds")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(SUITES)
    rows: list[Measurement] = []
    skipped: dict[str, str] = {}
    failed: dict[str, str] = {}
    started = time.time()
    for name in names:
        print(f"bench: {name} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        try:
            module = importlib.import_module(SUITES[name])
            got: list[Measurement] = await module.run(args.quick)
        except Unavailable as exc:
            skipped[name] = str(exc)
            print(f"bench: {name} skipped: {exc}", file=sys.stderr)
            continue
        except Exception as exc:  # one broken suite must not hide the others' numbers
            failed[name] = f"{type(exc).__name__}: {exc}"
            print(f"bench: {name} FAILED: {failed[name]}", file=sys.stderr)
            continue
        rows += got
        print(f"bench: {name} done in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    print(format_table(rows))
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "duration_s": round(time.time() - started, 1),
        "quick": args.quick,
        "machine": machine(),
        "measurements": [r.as_dict() for r in rows],
        "skipped": skipped,
        "failed": failed,
    }
    # A partial run (--only) writes its own files: it must not replace the full run's results.
    stem = "quick" if args.quick else "latest"
    if args.only:
        stem = "-".join([*(["quick"] if args.quick else []), *names])
    (args.out / f"{stem}.json").write_text(json.dumps(report, indent=2) + "\n")
    (args.out / f"{stem}.md").write_text(format_table(rows) + "\n")
    if rows:
        chart(rows, args.out / f"{stem}.png")
    print(f"wrote {args.out / (stem + '.json')} and .png", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
