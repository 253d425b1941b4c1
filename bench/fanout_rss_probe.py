"""Child process for the fan-out memory measurement: fan out N sandboxes, print peak RSS (MiB)."""

from __future__ import annotations

import asyncio
import sys

from sandlot import Sandbox, fanout
from sandlot.config import provider_from_config
from sandlot.fanout import Slot

from .rss_probe import peak_rss_mib


async def job(sandbox: Sandbox, slot: Slot) -> None:
    await sandbox.exec("head -c 1000000 /dev/zero", check=True)


async def main(config: str, n: int) -> None:
    report = await fanout.run(job, provider_from_config(config), n=n, max_parallel=n)
    if not report.ok:
        raise SystemExit(f"fan-out failed: {report.to_json()}")
    print(peak_rss_mib())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
