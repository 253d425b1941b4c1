"""Hostile inputs through the OpenAI Agents SDK session: paths outside the workspace, symlinks
the sandbox's own commands plant, names with newlines, a thousand files at once, a sandbox
that vanishes mid-call. Each gives the SDK's own typed errors (`SandboxError` subclasses, or
a tool output the model reads), nothing hangs, nothing outside the workspace is read or
written. On local (the host file system is right there to check) and local-bwrap; the
vanished sandbox on docker (a container removed from outside).
"""

from __future__ import annotations

import asyncio
import io
import shlex
import tarfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.openai_harness import (
    call,
    message,
    provider_config,
    require_packages,
    scripted_model,
    tool_outputs,
)

require_packages()

from agents import Runner  # noqa: E402
from agents.run import RunConfig  # noqa: E402
from agents.sandbox import Manifest, SandboxAgent, SandboxError, SandboxRunConfig  # noqa: E402
from agents.sandbox.capabilities import Filesystem, Shell  # noqa: E402
from agents.sandbox.entries import File  # noqa: E402
from agents.sandbox.errors import (  # noqa: E402
    ExecTransportError,
    InvalidManifestPathError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
)

from sandlot.integrations.openai_agents import (  # noqa: E402
    SandlotSandboxClient,
    SandlotSandboxClientOptions,
    SandlotSandboxSession,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["local", "local-bwrap"])
async def session(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    async with provider_config(request.param) as (config, token):
        client = SandlotSandboxClient(session_token=token)
        made = await client.create(options=SandlotSandboxClientOptions(provider=config))
        try:
            async with made:
                yield made
        finally:
            await client.delete(made)


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("outside")
    (path / "secret.txt").write_text("TOP SECRET\n")
    return path


def _untouched(outside: Path) -> None:
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "TOP SECRET\n"


async def _refused(op: Any) -> SandboxError:
    with pytest.raises(SandboxError) as caught:
        await op
    assert "TOP SECRET" not in str(caught.value)
    return caught.value


async def test_paths_outside_the_workspace(session: Any, outside: Path) -> None:
    for path in (str(outside / "secret.txt"), f"../{outside.name}/secret.txt", "/etc/passwd"):
        assert isinstance(await _refused(session.read(Path(path))), InvalidManifestPathError)
        assert isinstance(await _refused(session.write(Path(path), io.BytesIO(b"pwned"))),
                          InvalidManifestPathError)
        await _refused(session.ls(path))
        await _refused(session.rm(path))
    await _refused(session.apply_patch({"type": "create_file", "path": "../evil.txt",
                                        "diff": "+pwned\n"}))
    _untouched(outside)


async def test_symlinks_planted_by_the_sandbox_lead_nowhere(session: Any,
                                                            outside: Path) -> None:
    q = shlex.quote
    done = await session.exec(f"ln -s {q(str(outside))} dir && "
                              f"ln -s {q(str(outside / 'secret.txt'))} file && "
                              f"ln -s {q(str(outside / 'new.txt'))} dangling")
    assert done.exit_code == 0, done.stderr
    for path in ("file", "dir/secret.txt"):
        assert isinstance(await _refused(session.read(Path(path))), InvalidManifestPathError)
    for path in ("dangling", "dir/new.txt", "file"):
        assert isinstance(await _refused(session.write(Path(path), io.BytesIO(b"pwned"))),
                          InvalidManifestPathError)
    await _refused(session.ls("dir"))
    await _refused(session.mkdir("dir/sub"))
    await _refused(session.rm("dir/secret.txt"))
    await _refused(session.apply_patch({"type": "update_file", "path": "file",
                                        "diff": "@@\n-TOP SECRET\n+pwned\n"}))
    # The workspace's tar keeps no link that leads out (the SDK would refuse it on restore).
    with tarfile.open(fileobj=await session.persist_workspace()) as tar:
        assert not {"./dir", "./file", "./dangling"} & set(tar.getnames())
    _untouched(outside)


async def test_hostile_archives_are_refused(session: Any, outside: Path) -> None:
    for name, kind, link in (("../escape.txt", tarfile.REGTYPE, ""),
                             ("link", tarfile.SYMTYPE, str(outside))):
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w") as tar:
            info = tarfile.TarInfo(name)
            info.type, info.linkname = kind, link
            tar.addfile(info, io.BytesIO(b""))
        raw.seek(0)
        assert isinstance(await _refused(session.hydrate_workspace(raw)),
                          WorkspaceArchiveWriteError)
    _untouched(outside)


async def test_names_with_newlines(session: Any) -> None:
    error = await _refused(session.write(Path("a\nb.txt"), io.BytesIO(b"x")))
    assert isinstance(error, InvalidManifestPathError)
    await _refused(session.read(Path("a\nb.txt")))
    # A name the sandbox's own command made is there for the commands, whole.
    made = await session.exec("printf x > \"$(printf 'c\\nd')\" && "
                              "cat \"$(printf 'c\\nd')\"")
    assert made.exit_code == 0 and made.stdout == b"x"


async def test_a_thousand_files_at_once(outside: Path) -> None:
    """A manifest of 1,000 files (the SDK's many-files route) materialises, bounded."""
    entries = {f"many/f{i:04}.txt": File(content=f"{i}\n".encode()) for i in range(1000)}
    async with provider_config("local") as (config, token):
        client = SandlotSandboxClient(session_token=token)
        made = await client.create(options=SandlotSandboxClientOptions(provider=config),
                                   manifest=Manifest(entries=entries))
        try:
            started = time.monotonic()
            with anyio_fail_after(240):  # hangs fail; timing itself is not asserted
                await made.start()
            took = time.monotonic() - started
            inner = made._inner
            assert isinstance(inner, SandlotSandboxSession)
            count = await inner.sandbox.exec("ls many | wc -l", check=True)
            assert count.stdout.strip() == "1000", took
            last = await made.read(Path("many/f0999.txt"))
            assert last.read() == b"999\n"
        finally:
            await client.delete(made)


def anyio_fail_after(seconds: float) -> Any:
    import anyio

    return anyio.fail_after(seconds)


async def test_a_sandbox_vanished_mid_call() -> None:
    """docker: the container is removed from outside while a command runs. The command in
    flight, the next calls and the agent's next tool call all end with the SDK's typed
    errors, within bounds."""
    from tests.backends.docker import engine

    async with provider_config("docker") as (config, token):
        client = SandlotSandboxClient(session_token=token)
        made = await client.create(options=SandlotSandboxClientOptions(provider=config))
        inner = made._inner
        assert isinstance(inner, SandlotSandboxSession)
        try:
            await made.start()
            running = asyncio.create_task(made.exec("sleep 60"))
            await asyncio.sleep(1.0)
            engine().docker("rm", "-f", inner.sandbox.container_id)  # type: ignore[attr-defined]
            with anyio_fail_after(60):
                with pytest.raises(ExecTransportError):
                    await running
                with pytest.raises(ExecTransportError):
                    await made.exec("true")
                with pytest.raises(WorkspaceArchiveReadError):
                    await made.read(Path("x.txt"))
                with pytest.raises(WorkspaceArchiveWriteError):
                    await made.write(Path("x.txt"), io.BytesIO(b"x"))
                with pytest.raises(WorkspaceArchiveReadError):
                    await made.persist_workspace()
                # The agent's tool call gets an error output and the run goes on.
                model = scripted_model([
                    [call("exec_command", {"cmd": "echo hi", "yield_time_ms": 5000}, "c1")],
                    [message("noticed")]])
                agent = SandboxAgent(name="dev", model=model,
                                     capabilities=[Filesystem(), Shell()])
                result = await Runner.run(agent, "run it", run_config=RunConfig(
                    sandbox=SandboxRunConfig(session=made)))
                assert result.final_output == "noticed"
                assert "error" in tool_outputs(model)["c1"].lower()
        finally:
            await client.delete(made)  # a container already gone: done, not an error
