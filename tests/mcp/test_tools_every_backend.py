"""The MCP server on every backend, driven by the mcp SDK's own client (in memory; the stdio
and HTTP transports are in test_stdio.py and test_http.py): each tool, bad calls as tool
errors, read-only and containment refusals, progress, and a cancellation that ends the
command in the sandbox."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from types import ModuleType
from typing import Any

import anyio
import pytest
from mcp import Client

from sandlot import Sandbox
from sandlot.mcp_server import build_server
from sandlot.tools import Toolbox

pytestmark = pytest.mark.anyio


@pytest.fixture
async def box(sandbox: Sandbox, workdir: str) -> AsyncIterator[Toolbox]:
    await sandbox.exec(["mkdir", "-p", f"{workdir}/a", f"{workdir}/b"], check=True)
    await sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", f"{workdir}/a/f.txt"],
                       stdin=b"alpha\nneedle here\n", check=True)
    async with Toolbox(sandbox, {"a": f"{workdir}/a", "b": f"{workdir}/b"}) as made:
        yield made


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_every_tool_is_listed_with_the_toolbox_schema(box: Toolbox) -> None:
    async with Client(build_server(box)) as client:
        listed = (await client.list_tools()).tools
    schemas = {s["function"]["name"]: s["function"] for s in box.tool_schemas()}
    assert [t.name for t in listed] == list(schemas)
    for tool in listed:
        assert tool.input_schema == schemas[tool.name]["parameters"]  # one source of truth
        assert tool.description == schemas[tool.name]["description"]
        assert tool.annotations is not None
    hints = {t.name: t.annotations for t in listed}
    assert hints["read"].read_only_hint and not hints["read"].destructive_hint
    assert hints["bash"].destructive_hint and not hints["bash"].read_only_hint
    assert not hints["run_tests"].read_only_hint and not hints["run_tests"].destructive_hint


async def test_each_file_tool_over_mcp(box: Toolbox, backend: ModuleType) -> None:
    async with Client(build_server(box)) as client:
        read = await client.call_tool("read", {"path": "f.txt", "workspace": "a"})
        assert not read.is_error and text(read) == "     1\talpha\n     2\tneedle here"
        assert read.structured_content["total_lines"] == 2
        wrote = await client.call_tool("write", {"path": "new/g.txt", "content": "gamma\n",
                                                 "workspace": "b"})
        assert not wrote.is_error, text(wrote)
        edited = await client.call_tool("edit", {"path": "f.txt", "old": "alpha",
                                                 "new": "ALPHA", "workspace": "a"})
        assert not edited.is_error, text(edited)
        globbed = await client.call_tool("glob", {"pattern": "**/*.txt", "workspace": "b"})
        assert globbed.structured_content["paths"] == ["new/g.txt"]
        found = await client.call_tool("grep", {"pattern": "needle", "workspace": "a"})
        assert "f.txt:2:needle here" in text(found)
        ran = await client.call_tool("bash", {"command": "cat new/g.txt; exit 3",
                                              "workspace": "b"})
        assert not ran.is_error and ran.structured_content["exit_code"] == 3
        assert text(ran) == "gamma\n[exit code 3]"
        started = await client.call_tool("bash", {"command": "echo bg-out", "workspace": "a",
                                                  "background": True})
        shell = started.structured_content["shell_id"]
        seen = ""  # bash_output returns what is new since the last call
        for _ in range(100):
            output = await client.call_tool("bash_output", {"shell_id": shell})
            seen += text(output)
            if output.structured_content["status"] != "running":
                break
            await anyio.sleep(0.1)
        assert "bg-out" in seen and output.structured_content["exit_code"] == 0
        killed = await client.call_tool("kill_shell", {"shell_id": shell})
        assert not killed.is_error, text(killed)
        code = await client.call_tool("run_code", {"code": "echo from-snippet $((6*7))",
                                                   "mode": "shell"})
        if code.is_error:  # busybox images have no bash: said as a tool error
            assert code.structured_content["error"] == "RuntimeNotFoundError", text(code)
        else:
            assert code.structured_content["stdout"] == "from-snippet 42\n"


@pytest.mark.parametrize(
    ("name", "arguments", "error", "says"),
    [
        ("read", {"path": "f.txt"}, "WorkspaceError", "pass `workspace` to pick one"),
        ("read", {"path": "../b/x", "workspace": "a"}, "PathOutsideWorkspaceError", "outside"),
        ("read", {"path": "/etc/passwd", "workspace": "a"}, "PathOutsideWorkspaceError",
         "outside"),
        ("read", {"workspace": "a"}, "InvalidArguments", "path: Field required"),
        ("grep", {"pattern": "(", "workspace": "a"}, "ToolError", ""),
        ("nope", {}, "UnknownTool", 'unknown tool "nope"'),
        ("run_failing_tests", {"workspace": "a"}, "NoTestRunError", "call run_tests first"),
    ],
)
async def test_a_bad_call_is_a_tool_error(box: Toolbox, name: str, arguments: dict[str, Any],
                                          error: str, says: str) -> None:
    async with Client(build_server(box)) as client:
        result = await client.call_tool(name, arguments)
    assert result.is_error
    assert result.structured_content["error"] == error, text(result)
    assert says in text(result)


async def test_readonly_offers_and_runs_only_what_changes_nothing(box: Toolbox) -> None:
    readonly = Toolbox(box.sandbox, box.workspaces, readonly=True)
    async with Client(build_server(readonly)) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["read", "glob", "grep", "find_definition", "find_references", "hover",
                         "document_symbols", "workspace_symbols", "diagnostics", "snapshot_list",
                         "snapshot_diff"]
        refused = await client.call_tool("write", {"path": "x", "content": "y",
                                                   "workspace": "a"})
        assert refused.is_error and refused.structured_content["error"] == "ReadOnlyError"
        assert "read-only" in text(refused)
        still = await client.call_tool("read", {"path": "f.txt", "workspace": "a"})
        assert not still.is_error
    gone = await box.sandbox.exec(["test", "-e", f"{box.workspaces.resolve('a')}/x"])
    assert gone.exit_code != 0


async def test_progress_notifications_carry_the_output(box: Toolbox) -> None:
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with Client(build_server(box, progress_interval=0.3)) as client:
        result = await client.call_tool(
            "bash", {"command": "echo first-line; sleep 1.5; echo last", "workspace": "a"},
            progress_callback=on_progress)
    assert not result.is_error
    assert len(seen) >= 2, seen
    values = [p for p, _ in seen]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert any(m and "last: first-line" in m for _, m in seen), seen


async def test_cancelling_a_call_ends_the_command_in_the_sandbox(
    box: Toolbox, backend: ModuleType
) -> None:
    root = box.workspaces.resolve("a")
    command = ("echo $$ > pid; while :; do date +%s%N > beat; sleep 0.1; done")
    async with Client(build_server(box)) as client:
        with anyio.move_on_after(30):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "bash",
                                 {"command": command, "workspace": "a", "timeout": 300})
                deadline = time.monotonic() + 20
                while (await box.sandbox.exec(["test", "-s", f"{root}/beat"])).exit_code:
                    assert time.monotonic() < deadline, "the command never started"
                    await anyio.sleep(0.1)
                group.cancel_scope.cancel()
        # The server stays usable after a cancellation.
        after = await client.call_tool("read", {"path": "f.txt", "workspace": "a"})
        assert not after.is_error
    await anyio.sleep(1.0)
    first = (await box.sandbox.exec(["cat", f"{root}/beat"])).stdout
    await anyio.sleep(0.6)
    assert (await box.sandbox.exec(["cat", f"{root}/beat"])).stdout == first, "it still runs"
    if backend.SHARED_PIDS:
        pid = (await box.sandbox.exec(["cat", f"{root}/pid"])).stdout.strip()
        assert await _ended(box, pid), f"process {pid} is still alive"


# Gone from /proc, or a zombie: dead, waiting for a parent that may be slow to reap it (`kill -0`
# succeeds on a zombie, which made this check fail under load).
_ENDED = 's=$(cat /proc/"$1"/stat 2>/dev/null) || exit 0; s=${s##*) }; [ "${s%% *}" = Z ]'


async def _ended(box: Toolbox, pid: str) -> bool:
    return (await box.sandbox.exec(["sh", "-c", _ENDED, "sh", pid])).exit_code == 0


async def test_structured_content_is_plain_json(box: Toolbox) -> None:
    async with Client(build_server(box)) as client:
        result = await client.call_tool("grep", {"pattern": "needle", "workspace": "a"})
    assert json.loads(json.dumps(result.structured_content)) == result.structured_content
    assert result.structured_content["tool"] == "grep"
