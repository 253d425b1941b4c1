"""Child process for the memory measurement: stream N bytes through exec, print peak RSS (MiB)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from sandlot.config import provider_from_config


def peak_rss_mib() -> float:
    """This process's own peak RSS: VmHWM, which belongs to the process's memory map. Not
    getrusage's ru_maxrss: Linux carries that over exec from the map exec replaced, so a child
    started with vfork reports its parent's peak (every probe read the bench's own RSS)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


async def main(config: str, nbytes: int) -> None:
    provider = provider_from_config(config)
    async with provider.session() as sandbox:
        if nbytes:
            result = await sandbox.exec(f"head -c {nbytes} /dev/zero", timeout=900)
            assert result.stdout_truncated, "expected the capture to be cut"
        else:
            await sandbox.exec("true", check=True)
    print(peak_rss_mib())


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
