"""Faults, on local sandboxes (the behaviour is the client's, not the backend's): a server
killed mid-request, a server that never finishes indexing (the one fake server), a rename
that would change a file outside the workspace, a server that is not installed, a file no
language owns."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import anyio
import pytest

import sandlot
from sandlot.errors import (
    LanguageServerCrashedError,
    LanguageServerNotInstalledError,
    LanguageServerTimeoutError,
    NoLanguageServerError,
    PathOutsideWorkspaceError,
)
from sandlot.lsp import LanguageServers

from .support import FIXTURES, require_servers
from .support import _local as local_backend

pytestmark = pytest.mark.anyio

#: The pids of `$2` processes whose working directory is `$1` (a server of one workspace).
PIDS = """for p in /proc/[0-9]*; do
  [ "$(cat "$p/comm" 2>/dev/null)" = "$2" ] || continue
  [ "$(readlink "$p/cwd" 2>/dev/null)" = "$1" ] && echo "${p#/proc/}"
done; true"""


@pytest.fixture(scope="module")
async def go_sandbox() -> AsyncIterator[tuple[sandlot.Sandbox, dict[str, str]]]:
    require_servers("go")
    async with local_backend() as (provider, env), provider.session() as sandbox:
        await sandbox.copy_in(FIXTURES / "go", sandbox.worktree)
        yield sandbox, env


async def _pids(sandbox: sandlot.Sandbox, root: str, name: str) -> list[int]:
    result = await sandbox.exec(["sh", "-c", PIDS, "sh", root, name], check=True)
    return [int(p) for p in result.stdout.split()]


async def test_a_server_killed_mid_request_is_a_typed_error_and_the_next_call_restarts_it(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    sandbox, env = go_sandbox
    async with LanguageServers(sandbox, env=env) as lsp:
        assert await lsp.find_references("store/store.go", 25, 17)
        server = next(iter(lsp._servers.values()))
        deadline = time.monotonic() + 120
        while server.busy():  # gopls analyses dependencies after loading: let it finish
            assert time.monotonic() < deadline, server.busy()
            await anyio.sleep(0.2)
        [pid] = await _pids(sandbox, sandbox.worktree, "gopls")
        # Stopped, it cannot answer: the request is surely in flight when the kill lands.
        await sandbox.exec(["kill", "-STOP", str(pid)], check=True)
        failure: list[BaseException] = []

        async def ask() -> None:
            try:
                await lsp.find_references("store/store.go", 25, 17)
            except LanguageServerCrashedError as exc:
                failure.append(exc)

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(ask)
                assert server.connection is not None
                while not server.connection._pending:  # noqa: ASYNC110 - a private dict
                    await anyio.sleep(0.05)
                await sandbox.exec(["kill", "-KILL", str(pid)], check=True)
        assert failure, "the pending request did not fail when its server died"
        assert "gopls" in str(failure[0]) and "starts it again" in str(failure[0])
        again = await lsp.find_references("store/store.go", 25, 17)
        assert len(again) == 4
        [new_pid] = await _pids(sandbox, sandbox.worktree, "gopls")
        assert new_pid != pid and len(lsp.running()) == 1


async def test_a_server_that_never_finishes_indexing_is_bounded_and_visible(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    sandbox, env = go_sandbox
    fake = f"{sandbox.worktree}/.fake/never_indexes.py"
    await sandbox.copy_in(FIXTURES / "fake" / "never_indexes.py", fake)
    heard: list[str] = []
    async with LanguageServers(sandbox, env=env, index_timeout=3, on_progress=heard.append,
                               commands={"go": ["python3", fake]}) as lsp:
        started = time.monotonic()
        with pytest.raises(LanguageServerTimeoutError) as info:
            await lsp.find_definition("cmd/shop/main.go", 17, 18)
        # Bounded: it gave up near index_timeout, not never (generous slack under load).
        assert time.monotonic() - started < 60
        assert "still indexing after 3s" in str(info.value) and "Indexing" in str(info.value)
        assert "index_timeout" in str(info.value)
        assert any(m.startswith("python3: Indexing") for m in heard), heard
    assert await _pids(sandbox, sandbox.worktree, "python3") == []


async def test_a_rename_that_would_change_a_file_outside_the_workspace_is_refused(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    sandbox, env = go_sandbox
    root = sandbox.worktree
    # The workspace is the command's directory; the store it calls lives outside it.
    async with LanguageServers(sandbox, {"cmd": f"{root}/cmd"}, env=env) as lsp:
        before = (await sandbox.exec(["cat", "store/store.go", "cmd/shop/main.go"])).stdout
        with pytest.raises(PathOutsideWorkspaceError) as info:
            await lsp.rename_symbol("shop/main.go", 17, 18, "Fetch", workspace="cmd")
        assert f"{root}/store/store.go" in str(info.value)
        assert "nothing was changed" in str(info.value)
        after = (await sandbox.exec(["cat", "store/store.go", "cmd/shop/main.go"])).stdout
        assert after == before


async def test_a_server_not_installed_names_what_to_install(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    sandbox, _ = go_sandbox
    async with LanguageServers(sandbox, env={"PATH": "/usr/bin:/bin"}) as lsp:
        with pytest.raises(LanguageServerNotInstalledError) as info:
            await lsp.find_definition("cmd/shop/main.go", 17, 18)
        assert info.value.binary == "gopls"
        assert "go install golang.org/x/tools/gopls@" in str(info.value)
        assert lsp.running() == []


async def test_a_file_no_language_owns_is_a_clear_error(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    sandbox, env = go_sandbox
    async with LanguageServers(sandbox, env=env) as lsp:
        with pytest.raises(NoLanguageServerError) as info:
            await lsp.hover("go.mod", 1, 1)
        assert ".go" in str(info.value) and ".ts" in str(info.value)


async def test_columns_after_astral_characters_are_characters_both_ways(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    sandbox, env = go_sandbox
    line = 'func tea() { _ = "\U0001f375\U0001f375"; s := store.New(); s.Put("\U0001f375", 1) }'
    source = f'package main\n\nimport "example.com/shop/store"\n\n{line}\n'
    await sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", "cmd/shop/tea.go"],
                       stdin=source.encode(), check=True)
    try:
        async with LanguageServers(sandbox, env=env) as lsp:
            column = line.index("Put") + 1  # in characters: each emoji is one
            [found] = await lsp.find_definition("cmd/shop/tea.go", 5, column)
            assert (found.path, found.span.line, found.span.column) == ("store/store.go", 20, 17)
            refs = await lsp.find_references("store/store.go", 20, 17)
            assert ("cmd/shop/tea.go", 5, column) in {
                (r.path, r.span.line, r.span.column) for r in refs}
    finally:
        await sandbox.exec(["rm", "-f", "cmd/shop/tea.go"])


async def test_location_text_is_read_inside_the_workspace_only(
        go_sandbox: tuple[sandlot.Sandbox, dict[str, str]]) -> None:
    from sandlot.lsp.files import read_many

    sandbox, env = go_sandbox
    root = sandbox.worktree
    await sandbox.exec(["sh", "-c", "mkdir -p ../outside-$$ && echo secret > ../outside-$$/s.go"
                        " && ln -sfn \"$(cd ../outside-$$ && pwd)\" linked && ln -sfn "
                        "\"$(cd ../outside-$$ && pwd)/s.go\" link.go"], check=True)
    try:
        got = await read_many(sandbox, root, [f"{root}/go.mod", f"{root}/linked/s.go",
                                              f"{root}/link.go", f"{root}/missing.go",
                                              f"{root}/store/store.go"], env=env)
        assert got[f"{root}/go.mod"] == "module example.com/shop\n\ngo 1.22\n"
        assert got[f"{root}/linked/s.go"] is None and got[f"{root}/link.go"] is None
        assert got[f"{root}/missing.go"] is None
        assert (got[f"{root}/store/store.go"] or "").startswith("// Package store")
    finally:
        await sandbox.exec(["rm", "-f", "linked", "link.go"])


async def test_servers_end_with_the_sandbox() -> None:
    require_servers("go")
    async with local_backend() as (provider, env):
        sandbox = await provider.create()
        try:
            await sandbox.copy_in(FIXTURES / "go", sandbox.worktree)
            lsp = LanguageServers(sandbox, env=env)
            assert await lsp.find_definition("cmd/shop/main.go", 17, 18)
            [pid] = await _pids(sandbox, sandbox.worktree, "gopls")
        finally:
            await sandbox.close()  # no lsp.aclose(): the sandbox's close ends its servers
        from tests.helpers import host_alive

        assert host_alive([pid]) == []
        assert lsp.running() == []
