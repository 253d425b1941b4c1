"""The navigation tools through the toolbox and MCP (the official SDK's client, in memory),
on the Go fixture in a local sandbox with one gopls for the module: the workspace argument,
progress notifications while the cold server loads, read-only mode, and rename_symbol's
read-before-write rule."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from mcp import Client

from sandlot.mcp_server import build_server
from sandlot.tools import Toolbox

from .support import FIXTURES, require_servers
from .support import _local as local_backend

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
async def box() -> AsyncIterator[Toolbox]:
    require_servers("go")
    async with local_backend() as (provider, env), provider.session() as sandbox:
        root = f"{sandbox.worktree}/svc"
        await sandbox.copy_in(FIXTURES / "go", root)
        await sandbox.exec(["mkdir", "-p", f"{sandbox.worktree}/notes"], check=True)
        async with Toolbox(sandbox, {"svc": root, "notes": f"{sandbox.worktree}/notes"},
                           env=env) as made:
            yield made


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_a_cold_call_over_mcp_reports_the_servers_progress(box: Toolbox) -> None:
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async with Client(build_server(box, progress_interval=0.2)) as client:
        result = await client.call_tool(
            "find_references", {"path": "store/store.go", "line": 25, "column": 17,
                                "workspace": "svc"}, progress_callback=on_progress)
    assert not result.is_error, text(result)
    assert text(result).startswith("4 references in 3 files\n")
    assert "\ncmd/shop/main.go:17:18: cents, err := s.Get(name)\n" in text(result)
    assert result.structured_content["workspace"] == "svc"
    assert len(result.structured_content["locations"]) == 4
    assert any(m and "gopls: " in m for m in seen), seen


async def test_the_tools_answer_in_the_model_s_words(box: Toolbox) -> None:
    found = await box.call("find_definition", {"path": "cmd/shop/main.go", "line": 17,
                                               "column": 18, "workspace": "svc"})
    assert found.ok and found.text.startswith("store/store.go:25:17: func (s *Store) Get(")
    named = await box.call("find_definition", {"path": "", "symbol": "Store.Get",
                                               "workspace": "svc"})
    assert named.ok and named.text.startswith("store/store.go:25:17:"), named.text
    hover = await box.call("hover", {"path": "cmd/shop/main.go", "line": 17, "column": 2,
                                     "workspace": "svc"})
    assert hover.ok and "var cents int" in hover.text
    symbols = await box.call("document_symbols", {"path": "store/store.go", "workspace": "svc"})
    assert "method (*Store).Get at store/store.go:25:17" in symbols.text
    clean = await box.call("diagnostics", {"path": "store/store.go", "workspace": "svc"})
    assert clean.ok and clean.text == "(no problems in store/store.go)"
    missing = await box.call("hover", {"path": "cmd/shop/main.go", "line": 99, "column": 1,
                                       "workspace": "svc"})
    assert not missing.ok and "line 99 is out of range" in missing.text


async def test_rename_needs_every_file_it_changes_read_first(box: Toolbox) -> None:
    args = {"path": "store/store.go", "line": 20, "column": 17, "new_name": "Set",
            "workspace": "svc"}
    refused = await box.call("rename_symbol", args)
    assert not refused.ok and refused.error == "NotReadError", refused.text
    assert "cmd/shop/main.go, store/store.go, store/store_test.go" in refused.text
    for path in ("cmd/shop/main.go", "store/store.go", "store/store_test.go"):
        await box.read(path, workspace="svc")
    done = await box.call("rename_symbol", args)
    assert done.ok, done.text
    assert done.text.splitlines()[0] == "Renamed Put to Set: 4 changes in 3 files"
    back = await box.call("rename_symbol", {**args, "new_name": "Put"})
    assert back.ok and back.text.splitlines()[0] == "Renamed Set to Put: 4 changes in 3 files"
    built = await box.bash("go build ./... && go test -count=1 ./...", workspace="svc")
    assert built.exit_code == 0, built.text


async def test_read_only_offers_navigation_but_not_rename(box: Toolbox) -> None:
    readonly = Toolbox(box.sandbox, box.workspaces, readonly=True, env=box.env)
    try:
        assert "find_references" in readonly.tool_names
        assert "rename_symbol" not in readonly.tool_names
        refused = await readonly.call("rename_symbol", {
            "path": "store/store.go", "line": 25, "column": 17, "new_name": "Fetch",
            "workspace": "svc"})
        assert refused.error == "ReadOnlyError"
        async with Client(build_server(readonly)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert "hover" in names and "rename_symbol" not in names
            tool = next(t for t in (await client.list_tools()).tools if t.name == "hover")
            assert tool.annotations is not None and tool.annotations.read_only_hint
    finally:
        await readonly.aclose()
