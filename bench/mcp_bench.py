"""A tool call over MCP stdio against the same call on an in-process Toolbox, in one run.

`read` of a small file and `bash true`, each through `sandlot mcp` (a subprocess spoken to by
the mcp SDK's client over stdio) and through `Toolbox.call` on a local sandbox of this process.
Goal: within 1.5x + 2 ms (the protocol's JSON-RPC round trip over two pipes).
"""

from __future__ import annotations

import sys
from pathlib import Path

import sandlot
from sandlot.tools import Toolbox

from .core import Measurement, interleaved
from .measures import Scratch

SRC = Path(__file__).resolve().parents[1] / "src"


async def run(quick: bool = False) -> list[Measurement]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    rounds = 20 if quick else 200
    rows: list[Measurement] = []
    with Scratch() as scratch:
        work = scratch / "w"
        work.mkdir()
        (work / "f.txt").write_text("".join(f"line {i}\n" for i in range(200)))
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "sandlot", "mcp", "--root", f"w={work}"],
            env={"PYTHONPATH": str(SRC), "PATH": "/usr/local/bin:/usr/bin:/bin"},
        )
        async with sandlot.local().session() as sandbox, Toolbox(
            sandbox, {"w": str(work)}
        ) as box, Client(params) as client:
            for tool, arguments in (("read", {"path": "f.txt"}), ("bash", {"command": "true"})):

                async def over_mcp(tool: str = tool, arguments: dict[str, str] = arguments
                                   ) -> None:
                    result = await client.call_tool(tool, arguments)
                    assert not result.is_error, result

                async def in_process(tool: str = tool, arguments: dict[str, str] = arguments
                                     ) -> None:
                    result = await box.call(tool, arguments)
                    assert result.ok, result.text

                s, b = await interleaved(over_mcp, in_process, rounds=rounds, warmup=5)
                allowed = 1.5 * b + 0.002
                rows.append(Measurement(
                    "mcp", "local", f"{tool} over MCP stdio", f"Toolbox.call {tool}", s, b,
                    "s", target="<= 1.5x + 2 ms",
                    notes=f"overhead {1000 * (s - b):.2f} ms; "
                          f"{'meets' if s <= allowed else 'misses'} the goal",
                    extra={"overhead_ms": round(1000 * (s - b), 3)},
                ))
    return rows
