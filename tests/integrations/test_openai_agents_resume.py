"""Session state across processes, on every backend: the state is serialized (JSON), the
client dropped without deleting anything; a new client resumes it and finds the SAME sandbox
(reattached: what one handle writes the other reads); after that sandbox is deleted, resuming
the same state makes a new sandbox and hydrates it from the snapshot.
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from tests import backends
from tests.integrations.openai_harness import provider_config, require_packages

require_packages()

from agents.sandbox import LocalSnapshotSpec  # noqa: E402

from sandlot.errors import SandlotError  # noqa: E402
from sandlot.integrations.openai_agents import (  # noqa: E402
    SandlotSandboxClient,
    SandlotSandboxClientOptions,
    SandlotSandboxSession,
)

pytestmark = pytest.mark.anyio


async def _text(session: object, path: str) -> str:
    handle = await session.read(Path(path))  # type: ignore[attr-defined]
    return bytes(handle.read()).decode()


@pytest.mark.parametrize("backend", backends.selected())
async def test_resume_reattaches_then_hydrates_a_new_sandbox(backend: str,
                                                             tmp_path: Path) -> None:
    async with provider_config(backend) as (config, token):
        options = SandlotSandboxClientOptions(provider=config)
        first_client = SandlotSandboxClient(session_token=token)
        first = await first_client.create(options=options, snapshot=LocalSnapshotSpec(
            base_path=tmp_path / "snapshots"))
        first_inner = first._inner
        assert isinstance(first_inner, SandlotSandboxSession)
        old = first_inner.sandbox
        try:
            await first.start()
            await first.write(Path("notes/a.txt"), io.BytesIO(b"alpha\n"))
            made = await first.exec("printf beta > b.txt")
            assert made.exit_code == 0
            await first.stop()  # the snapshot, as a run's end persists it
            payload = json.dumps(first_client.serialize_session_state(first.state))
            assert token is None or token not in payload  # no secret in the state
            del first, first_client  # dropped: no delete, no shutdown

            # A new client, the same sandbox.
            client = SandlotSandboxClient(session_token=token)
            again = await client.resume(client.deserialize_session_state(json.loads(payload)))
            inner = again._inner
            assert isinstance(inner, SandlotSandboxSession)
            await again.start()
            assert inner.state.sandbox_ref == json.loads(payload)["sandbox_ref"]
            assert inner.sandbox.worktree == old.worktree
            assert await _text(again, "notes/a.txt") == "alpha\n"
            assert await _text(again, "b.txt") == "beta"
            await again.write(Path("seen-by-both.txt"), io.BytesIO(b"same sandbox\n"))
            both = await old.exec(["cat", "seen-by-both.txt"], check=True)
            assert both.stdout == "same sandbox\n"
            await client.delete(again)  # on_close=delete: the sandbox is gone

            # The sandbox is gone: a new one, hydrated from the snapshot.
            client = SandlotSandboxClient(session_token=token)
            state = client.deserialize_session_state(json.loads(payload))
            fresh = await client.resume(state)
            fresh_inner = fresh._inner
            assert isinstance(fresh_inner, SandlotSandboxSession)
            try:
                await fresh.start()
                assert fresh_inner.state.sandbox_ref != json.loads(payload)["sandbox_ref"]
                assert fresh_inner.state.manifest.root == fresh_inner.sandbox.worktree
                assert await _text(fresh, "notes/a.txt") == "alpha\n"
                assert await _text(fresh, "b.txt") == "beta"
                listed = await fresh_inner.sandbox.exec("ls -a", check=True)
                assert "seen-by-both.txt" not in listed.stdout  # written after the snapshot
            finally:
                await client.delete(fresh)
        finally:
            with contextlib.suppress(SandlotError):
                await old.close()  # the dropped handle (its sandbox was deleted above)
