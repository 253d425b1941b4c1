"""A polyglot workspace -- a Go service and its TypeScript frontend at one root -- where each
file goes to the server of its extension, not to the first detector found (the reference's
known gap: a .ts file in a workspace with go.mod got gopls)."""

from __future__ import annotations

import pytest

from sandlot.lsp import LanguageServers

from .support import FIXTURES, require_servers
from .support import _local as local_backend

pytestmark = pytest.mark.anyio


async def test_each_file_goes_to_the_server_of_its_extension() -> None:
    require_servers("go", "node")
    async with local_backend() as (provider, env), provider.session() as sandbox:
        await sandbox.copy_in(FIXTURES / "polyglot", sandbox.worktree)
        async with LanguageServers(sandbox, env=env) as lsp:
            go = await lsp.find_definition("main.go", 11, 22)
            assert [(d.path, d.span.line) for d in go] == [("handler/handler.go", 5)]
            ts = await lsp.find_definition("web/app.ts", 4, 23)
            assert [(d.path, d.span.line) for d in ts] == [("web/api.ts", 2)]
            running = lsp.running()
            assert len(running) == 2
            assert any(name.startswith("gopls (go)") for name in running)
            assert any(name.startswith("typescript-language-server (node)") for name in running)
            # Both servers answer a workspace-wide query, each for its own files.
            found = {(s.name, s.location.path) for s in await lsp.workspace_symbols("Price")}
            assert ("Price", "handler/handler.go") in found
            assert ("fetchPrice", "web/api.ts") in found
            hover = await lsp.hover("web/app.ts", 4, 9)
            assert hover is not None and "const cents: number" in hover.text
