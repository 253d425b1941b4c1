"""The snapshot tools (snapshot_create, snapshot_list, snapshot_restore, snapshot_diff) through
`Toolbox.call`, as a model calls them: per workspace, read-only refusals, and the read rule
after a restore. Docker runs on its toolchain image (busybox has no git)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import ModuleType

import pytest

from sandlot import IsolatedSandboxProvider, Sandbox
from sandlot.tools import Toolbox

pytestmark = pytest.mark.anyio


@pytest.fixture
async def gsandbox(backend: ModuleType, provider: IsolatedSandboxProvider,
                   ) -> AsyncIterator[Sandbox]:
    chosen = backend.toolchain_provider() if backend.NAME == "docker" else provider
    async with chosen.session() as made:
        await made.exec("mkdir a b && echo one > a/f.txt && echo two > b/g.txt", check=True)
        yield made


def workspaces(sandbox: Sandbox) -> dict[str, str]:
    return {"a": f"{sandbox.worktree}/a", "b": f"{sandbox.worktree}/b"}


async def test_the_four_tools_act_on_the_chosen_workspace(gsandbox: Sandbox) -> None:
    box = Toolbox(gsandbox, workspaces(gsandbox))
    made = await box.call("snapshot_create", {"label": "start", "workspace": "a"})
    assert made.ok, made.text
    snap_id = made.model_dump()["snapshot"]["id"]
    assert (await box.call("read", {"path": "f.txt", "workspace": "a"})).ok
    await gsandbox.exec("echo changed > a/f.txt && echo new > a/n.txt && echo x > b/g.txt",
                        check=True)
    listed = await box.call("snapshot_list", {"workspace": "a"})
    assert [s["id"] for s in listed.model_dump()["snapshots"]] == [snap_id]
    assert "start" in listed.text
    assert (await box.call("snapshot_list", {"workspace": "b"})).model_dump()["snapshots"] == []
    diff = await box.call("snapshot_diff", {"snapshot_id": snap_id, "workspace": "a"})
    assert sorted((c["status"], c["path"]) for c in diff.model_dump()["changes"]) == [
        ("A", "n.txt"), ("M", "f.txt")]
    assert "+changed" in diff.text
    # A snapshot of workspace a is not restored into b.
    wrong = await box.call("snapshot_restore", {"snapshot_id": snap_id, "workspace": "b"})
    assert not wrong.ok and "not of workspace b" in wrong.text
    back = await box.call("snapshot_restore", {"snapshot_id": snap_id, "workspace": "a"})
    assert back.ok, back.text
    assert (await gsandbox.exec("cat a/f.txt b/g.txt; ls a")).stdout == "one\nx\nf.txt\n"
    # The file read before the restore must be read again before it is written.
    stale = await box.call("write", {"path": "f.txt", "content": "y", "workspace": "a"})
    assert not stale.ok and stale.model_dump()["error"] == "NotReadError"
    same = await box.call("snapshot_diff", {"snapshot_id": snap_id, "workspace": "a"})
    assert same.model_dump()["changes"] == [] and "as snapshot" in same.text


async def test_readonly_lists_and_compares_but_never_creates_or_restores(
    gsandbox: Sandbox,
) -> None:
    writer = Toolbox(gsandbox, workspaces(gsandbox))
    snap_id = (await writer.call("snapshot_create", {"workspace": "a"})).model_dump()[
        "snapshot"]["id"]
    box = Toolbox(gsandbox, workspaces(gsandbox), readonly=True)
    assert [n for n in box.tool_names if n.startswith("snapshot")] == [
        "snapshot_list", "snapshot_diff"]
    for name, args in (("snapshot_create", {"workspace": "a"}),
                       ("snapshot_restore", {"snapshot_id": snap_id, "workspace": "a"})):
        refused = await box.call(name, args)
        assert not refused.ok and refused.model_dump()["error"] == "ReadOnlyError"
    assert (await box.call("snapshot_list", {"workspace": "a"})).ok
    assert (await box.call("snapshot_diff", {"snapshot_id": snap_id, "workspace": "a"})).ok
    assert [s.id for s in await gsandbox.snapshots()] == [snap_id]


async def test_bad_calls_say_what_to_do(gsandbox: Sandbox) -> None:
    box = Toolbox(gsandbox, workspaces(gsandbox))
    missing = await box.call("snapshot_restore", {"snapshot_id": "0123456789ab",
                                                  "workspace": "a"})
    assert not missing.ok and "see snapshot_list" in missing.text
    no_ws = await box.call("snapshot_create", {})
    assert not no_ws.ok and "workspace" in no_ws.text
