#!/usr/bin/env python3
"""Record the toolbox's tool schemas, as agent frameworks and MCP clients see them.

    .venv/bin/python scripts/record-tool-schemas.py

Writes tests/fixtures/toolbox/tool_schemas.json: `Toolbox.tool_schemas()` with one workspace,
with two, and read-only, plus the MCP tool list built from them. tests/unit/
test_tool_schemas_pinned.py compares them exactly: a refactor of the toolbox must not change
what a model is shown. Rerun this only for a deliberate change of a schema.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import sandlot
from sandlot.tools import Toolbox

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "toolbox" / "tool_schemas.json"


async def schemas() -> dict[str, Any]:
    """What is recorded (the test calls this too, and compares)."""
    from sandlot.mcp_server.tools import tool_list

    async with sandlot.local().session() as sandbox:
        # Named workspaces: the default one is named after the sandbox, which varies per run.
        one = {"main": sandbox.worktree}
        boxes = {
            "one": Toolbox(sandbox, one),
            "two": Toolbox(sandbox, {"svc": f"{sandbox.worktree}/svc",
                                     "lib": f"{sandbox.worktree}/lib"}),
            "readonly": Toolbox(sandbox, one, readonly=True),
            # Named secrets add the secret_env tool (the values never reach a schema).
            "secrets": Toolbox(sandbox, one, secrets={"NPM_TOKEN": "recorded-not-real"}),
        }
        found: dict[str, Any] = {name: box.tool_schemas() for name, box in boxes.items()}
        found["mcp"] = [tool.model_dump(mode="json", by_alias=True, exclude_none=True)
                        for tool in tool_list(boxes["two"])]
        return found


def main() -> None:
    OUT.write_text(json.dumps(anyio.run(schemas), indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
