"""pause() / resume() on every backend (issue 31): docker freezes the container (a durable
process lives on and carries on counting), coder stops the workspace and starts it again (the
disk is kept), local backends say NotSupportedError. Commands in between fail fast."""

from __future__ import annotations

from types import ModuleType

import anyio
import pytest

from sandlot import IsolatedSandboxProvider, NotSupportedError, SandboxPausedError

pytestmark = pytest.mark.anyio


async def test_pause_and_resume(provider: IsolatedSandboxProvider, backend: ModuleType) -> None:
    async with provider.session() as sandbox:
        await sandbox.exec("echo kept > disk.txt", check=True)
        if backend.NAME.startswith("local"):
            with pytest.raises(NotSupportedError, match="cannot be paused"):
                await sandbox.pause()
            assert not sandbox.paused
            assert (await sandbox.exec("cat disk.txt")).stdout == "kept\n"
            return
        durable = None
        if backend.NAME == "docker":
            durable = await sandbox.processes.start(
                "n=0; while :; do n=$((n+1)); echo $n; sleep 0.1; done")
            await anyio.sleep(0.5)
        await sandbox.pause()
        assert sandbox.paused
        await sandbox.pause()  # a second pause does nothing
        with pytest.raises(SandboxPausedError, match="resume"):
            await sandbox.exec("true")
        await sandbox.resume()
        assert not sandbox.paused
        assert (await sandbox.exec("cat disk.txt")).stdout == "kept\n"
        if durable is not None:
            before = (await durable.info()).output_bytes
            await anyio.sleep(1)
            info = await durable.info()
            assert info.running and info.output_bytes > before
            await durable.kill()


async def test_close_of_a_paused_sandbox_releases_it(
    provider: IsolatedSandboxProvider, backend: ModuleType
) -> None:
    sandbox = await provider.create()
    if backend.NAME.startswith("local"):
        with pytest.raises(NotSupportedError):
            await sandbox.pause()
    else:
        await sandbox.pause()
    with anyio.fail_after(300):  # the bug it guards against hung here
        await sandbox.close()
    assert sandbox.closed
