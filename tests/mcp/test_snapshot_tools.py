"""The snapshot tools over MCP (the SDK's own client, in memory), on a local sandbox: listed
with the toolbox's schemas and hints, called per workspace, refused when read-only."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

import sandlot
from sandlot.mcp_server import build_server
from sandlot.tools import Toolbox

pytestmark = pytest.mark.anyio


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_snapshot_tools_over_mcp() -> None:
    async with sandlot.local().session() as sandbox:
        await sandbox.exec("mkdir a b && echo one > a/f.txt", check=True)
        roots = {"a": f"{sandbox.worktree}/a", "b": f"{sandbox.worktree}/b"}
        box = Toolbox(sandbox, roots)
        async with Client(build_server(box)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert tools["snapshot_list"].annotations.read_only_hint
            assert tools["snapshot_restore"].annotations.destructive_hint
            assert tools["snapshot_create"].input_schema["required"] == ["workspace"]
            made = await client.call_tool("snapshot_create", {"workspace": "a", "label": "x"})
            assert not made.is_error, text(made)
            snap_id = made.structured_content["snapshot"]["id"]
            await sandbox.exec("echo two > a/f.txt", check=True)
            diff = await client.call_tool("snapshot_diff", {"snapshot_id": snap_id,
                                                            "workspace": "a"})
            assert diff.structured_content["changes"] == [{"status": "M", "path": "f.txt"}]
            back = await client.call_tool("snapshot_restore", {"snapshot_id": snap_id,
                                                               "workspace": "a"})
            assert not back.is_error, text(back)
        assert (await sandbox.exec("cat a/f.txt")).stdout == "one\n"
        async with Client(build_server(Toolbox(sandbox, roots, readonly=True))) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "snapshot_list" in names and "snapshot_create" not in names
            refused = await client.call_tool("snapshot_restore", {"snapshot_id": snap_id,
                                                                  "workspace": "a"})
            assert refused.is_error
            assert refused.structured_content["error"] == "ReadOnlyError"
            listed = await client.call_tool("snapshot_list", {"workspace": "a"})
            assert [s["id"] for s in listed.structured_content["snapshots"]] == [snap_id]
