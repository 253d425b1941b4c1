"""Child process for the memory measurement: stream N bytes through exec, print peak RSS (MiB)."""

from __future__ import annotations

import asyncio
import resource
import sys

from sandlot.config import provider_from_config


async def main(config: str, nbytes: int) -> None:
    provider = provider_from_config(config)
    async with provider.session() as sandbox:
        if nbytes:
            result = await sandbox.exec(f"head -c {nbytes} /dev/zero", timeout=900)
            assert result.stdout_truncated, "expected the capture to be cut"
        else:
            await sandbox.exec("true", check=True)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2])))
