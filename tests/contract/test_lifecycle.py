"""Closing: use after close, idempotent close, sessions that close on error and cancellation."""

from __future__ import annotations

import io
from pathlib import Path

import anyio
import pytest

from sandlot import IsolatedSandboxProvider, Sandbox, SandboxClosed

pytestmark = pytest.mark.anyio


async def test_use_after_close_raises(provider: IsolatedSandboxProvider, tmp_path: Path) -> None:
    sandbox = await provider.create()
    await sandbox.close()
    assert sandbox.closed
    with pytest.raises(SandboxClosed, match="is closed"):
        await sandbox.exec("true")
    with pytest.raises(SandboxClosed):
        await sandbox.start("true")
    with pytest.raises(SandboxClosed):
        await sandbox.copy_in(tmp_path, f"{sandbox.worktree}/x")
    with pytest.raises(SandboxClosed):
        await sandbox.copy_out(f"{sandbox.worktree}/x", tmp_path / "x")
    with pytest.raises(SandboxClosed):
        await sandbox.interactive(["true"], stdin=io.BytesIO(), stdout=io.BytesIO())


async def test_close_twice_is_harmless(provider: IsolatedSandboxProvider) -> None:
    sandbox = await provider.create()
    await sandbox.close()
    await sandbox.close()
    assert sandbox.closed


async def test_close_ends_background_processes(provider: IsolatedSandboxProvider) -> None:
    sandbox = await provider.create()
    process = await sandbox.start("sleep 300")
    with anyio.fail_after(60):
        await sandbox.close()
        result = await process.wait()
    assert result.exit_code != 0


async def test_session_closes_on_error(provider: IsolatedSandboxProvider) -> None:
    seen: list[Sandbox] = []
    with pytest.raises(RuntimeError, match="boom"):
        async with provider.session() as sandbox:
            seen.append(sandbox)
            raise RuntimeError("boom")
    assert seen[0].closed


async def test_session_closes_on_cancellation(provider: IsolatedSandboxProvider) -> None:
    # Cancel once the session exists and its command runs: creating a sandbox may take a
    # while on some backends (a container, a workspace), and that is not what this checks.
    seen: list[Sandbox] = []
    inside = anyio.Event()

    async def body() -> None:
        async with provider.session() as sandbox:
            seen.append(sandbox)
            inside.set()
            await sandbox.exec("sleep 300")

    async with anyio.create_task_group() as group:
        group.start_soon(body)
        with anyio.fail_after(120):
            await inside.wait()
        await anyio.sleep(0.5)
        group.cancel_scope.cancel()
    assert seen and seen[0].closed


async def test_interactive_pipes_and_pty(sandbox: Sandbox) -> None:
    out = io.BytesIO()
    code = await sandbox.interactive(
        ["sh", "-c", "cat; echo done; exit 3"], stdin=io.BytesIO(b"typed\n"), stdout=out,
        stderr=io.BytesIO(), tty=False,
    )
    assert code == 3
    assert out.getvalue() == b"typed\ndone\n"
    tty_out = io.BytesIO()
    code = await sandbox.interactive(
        ["sh", "-c", "tty; test -t 0"], stdin=io.BytesIO(b""), stdout=tty_out, tty=True
    )
    assert code == 0
    assert b"/dev/pts/" in tty_out.getvalue()
