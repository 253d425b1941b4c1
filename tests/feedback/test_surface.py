"""Post-edit feedback as tools reach it: one extra round trip per edit and none when off, the
same feedback over MCP (structured and as text), and the tool schemas' `feedback` argument."""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

import sandlot
from sandlot import Sandbox, _run_marks
from sandlot.errors import ToolError
from sandlot.mcp_server import build_server
from sandlot.sandbox import RunningCommand, SpawnSpec
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet
from tests.helpers import eventually
from tests.verify.support import tool_env

pytestmark = pytest.mark.anyio


@pytest.fixture
async def local_sandbox() -> AsyncIterator[Sandbox]:
    async with sandlot.local(env=tool_env()).session() as made:
        yield made


@contextlib.contextmanager
def recorded_spawns(sandbox: Sandbox) -> Iterator[list[tuple[SpawnSpec, RunningCommand]]]:
    """Every command the sandbox starts inside the block, with what it started."""
    original = sandbox._spawn
    seen: list[tuple[SpawnSpec, RunningCommand]] = []

    async def recording(spec: SpawnSpec) -> RunningCommand:
        running = await original(spec)
        seen.append((spec, running))
        return running

    sandbox._spawn = recording  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        del sandbox._spawn


async def spawns(sandbox: Sandbox, call: Callable[[], Awaitable[Any]]) -> int:
    with recorded_spawns(sandbox) as seen:
        await call()
    return len(seen)


async def test_feedback_costs_one_round_trip_and_none_when_off(local_sandbox: Sandbox) -> None:
    sandbox = local_sandbox
    box = Toolbox(sandbox, WorkspaceSet({"w": sandbox.worktree}), feedback_budget=60)
    await box.write("a.py", "x = 1\n", feedback=False)  # starts the session helper, if any
    # What the file operation costs depends on the transport (the session helper: nothing);
    # the checks cost exactly one command more, and none when off or for an unknown language.
    plain = await spawns(sandbox, lambda: box.write("b.py", "x = 1\n", feedback=False))
    checked = await spawns(sandbox, lambda: box.write("c.py", "x = 1\n"))
    edit_plain = await spawns(sandbox, lambda: box.edit("a.py", "x = 1", "x = 2",
                                                        feedback=False))
    edit_checked = await spawns(sandbox, lambda: box.edit("a.py", "x = 2", "x = 3"))
    notes = await spawns(sandbox, lambda: box.write("notes.md", "# notes\n"))
    assert (checked - plain, edit_checked - edit_plain, notes - plain) == (1, 1, 0)


async def test_feedback_over_mcp(local_sandbox: Sandbox) -> None:
    box = Toolbox(local_sandbox, WorkspaceSet({"w": local_sandbox.worktree}),
                  feedback_budget=60)
    async with Client(build_server(box)) as client:
        wrote = await client.call_tool("write", {"path": "m.py", "content": "import os\n"})
        off = await client.call_tool("write", {"path": "n.py", "content": "import os\n",
                                               "feedback": False})
    assert not wrote.is_error
    feedback = wrote.structured_content["feedback"]
    assert [(f["file"], f["line"], f["rule"]) for f in feedback["findings"]] == [
        ("m.py", 1, "F401")]
    assert feedback["formatted"] is True
    text = "".join(block.text for block in wrote.content)
    assert "m.py:1:8: error [F401]: `os` imported but unused" in text
    assert not off.is_error and off.structured_content["feedback"] is None


async def test_the_schemas_offer_feedback_on_write_and_edit_only(local_sandbox: Sandbox) -> None:
    box = Toolbox(local_sandbox)
    params = {s["function"]["name"]: s["function"]["parameters"] for s in box.tool_schemas()}
    for name in ("write", "edit"):
        assert params[name]["properties"]["feedback"]["anyOf"] == [
            {"type": "boolean"}, {"type": "null"}]
    assert [n for n, p in params.items() if "feedback" in p["properties"]] == ["write", "edit"]


@pytest.mark.parametrize("budget", [0, -1, 3601, float("nan"), True])
async def test_a_bad_budget_is_refused_before_anything_runs(local_sandbox: Sandbox,
                                                            budget: float) -> None:
    with pytest.raises(ToolError, match="feedback budget must be a number of seconds"):
        Toolbox(local_sandbox, feedback_budget=budget)


@pytest.mark.parametrize("after", [0.0, 0.001, 0.003, 0.01])
async def test_a_cancelled_edit_leaves_no_shell_behind(local_sandbox: Sandbox,
                                                       after: float) -> None:
    sandbox = local_sandbox
    box = Toolbox(sandbox, WorkspaceSet({"w": sandbox.worktree}), feedback_budget=60)
    await box.write("a.py", "x = 1\n", feedback=False)
    await box.read("a.py")

    async def cancelled() -> None:
        with anyio.move_on_after(after):
            await box.edit("a.py", "x = 1", "x = 2")

    mark = sandbox._engine.run_mark
    before = set(await anyio.to_thread.run_sync(_run_marks.host_pids, mark))  # the helper
    with recorded_spawns(sandbox) as started, contextlib.suppress(Exception):
        await cancelled()
    for _, running in started:
        with anyio.fail_after(5):
            await running.wait()

    async def ended() -> bool:
        # The script's last act, removing its scratch files, runs in the background for a
        # moment after the script itself has ended.
        left = set(await anyio.to_thread.run_sync(_run_marks.host_pids, mark)) - before
        return not left

    await eventually(ended, within=10, what="the end of every process the edit started")


async def test_the_checks_scratch_files_are_removed(local_sandbox: Sandbox) -> None:
    # The script's `rm` runs in the background (off the edit's path): the files still go.
    sandbox = local_sandbox
    box = Toolbox(sandbox, WorkspaceSet({"w": sandbox.worktree}), feedback_budget=60)
    with recorded_spawns(sandbox) as started:
        result = await box.write("s.py", "import os\n")
    scripts = [" ".join(spec.argv) for spec, _ in started]
    assert result.feedback is not None and result.feedback.findings
    prefixes = {m for s in scripts for m in re.findall(r"sandlot-feedback-[0-9a-f]+", s)}
    assert len(prefixes) == 1
    prefix = prefixes.pop()

    async def gone() -> bool:
        found = await sandbox.exec(["sh", "-c", 'ls -d -- /tmp/"$1".* /dev/shm/"$1".* '
                                    '2>/dev/null | wc -l', "sh", prefix])
        return found.stdout.strip() == "0"

    await eventually(gone, within=30, what="the scratch files' removal")


async def test_go_vet_runs_inside_a_module_only(local_sandbox: Sandbox) -> None:
    sandbox = local_sandbox
    root = sandbox.worktree
    code = "package sub\n\n// V is a value.\nconst V = 1\n"
    await sandbox.exec(["mkdir", "-p", "mod/pkg/sub", "loose"], cwd=root, check=True)
    box = Toolbox(sandbox, WorkspaceSet({"w": root}), feedback_budget=60)
    await box.write("mod/go.mod", "module example.com/mod\n\ngo 1.21\n", feedback=False)

    async def vet(path: str, box: Toolbox = box) -> str:
        result = await box.write(path, code)
        assert result.feedback is not None
        return {c.name: c.status for c in result.feedback.checks}["go vet"]

    # Two directories below the go.mod: found by the walk up, as `go env GOMOD` finds it.
    assert await vet("mod/pkg/sub/v.go") == "clean"
    assert await vet("loose/v.go") == "skipped"
    off = Toolbox(sandbox, WorkspaceSet({"w": root}), env={"GO111MODULE": "off"},
                  feedback_budget=60)
    assert await vet("mod/pkg/sub/w.go", off) == "skipped"
