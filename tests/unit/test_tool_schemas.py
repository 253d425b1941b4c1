"""Tool schemas (OpenAI function-tool shape, from pydantic) and the `call` dispatcher."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import sandlot
from sandlot import Sandbox
from sandlot.tools import TOOLS, ErrorResult, ReadResult, Toolbox

pytestmark = pytest.mark.anyio


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with sandlot.local().session() as made:
        await made.exec("mkdir -p a b && printf 'hello\\n' > a/f.txt", check=True)
        yield made


def walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [node] + [d for v in node.values() for d in walk(v)]
    if isinstance(node, list):
        return [d for v in node for d in walk(v)]
    return []


async def test_every_tool_has_a_function_schema(sandbox: Sandbox) -> None:
    box = Toolbox(sandbox, {"a": f"{sandbox.worktree}/a", "b": f"{sandbox.worktree}/b"})
    schemas = box.tool_schemas()
    assert [s["function"]["name"] for s in schemas] == [
        "read", "write", "edit", "glob", "grep", "bash", "bash_output", "kill_shell",
        "run_code", "run_tests", "run_lint", "run_typecheck", "run_failing_tests", "run_script",
        "find_definition", "find_references", "hover", "document_symbols", "workspace_symbols",
        "diagnostics", "rename_symbol", "watch_process", "watch_process_events",
        "snapshot_create", "snapshot_list", "snapshot_restore", "snapshot_diff"]
    for schema in schemas:
        assert set(schema) == {"type", "function"} and schema["type"] == "function"
        function = schema["function"]
        assert set(function) == {"name", "description", "parameters"}
        params = function["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert all("title" not in node for node in walk(params))
        model = TOOLS[function["name"]].args
        required = [n for n, f in model.model_fields.items() if f.is_required()]
        if "workspace" in params["properties"]:
            assert params["properties"]["workspace"]["enum"] == ["a", "b"]
            required.append("workspace")
        assert params["required"] == required
        for name, prop in params["properties"].items():
            assert prop["description"], f"{function['name']}.{name} has no description"
    json.dumps(schemas)  # plain JSON


async def test_one_workspace_is_optional_in_the_schema(sandbox: Sandbox) -> None:
    box = Toolbox(sandbox, {"a": f"{sandbox.worktree}/a"})
    read = box.tool_schemas()[0]["function"]["parameters"]
    assert read["required"] == ["path"]
    assert read["properties"]["workspace"]["enum"] == ["a"]


async def test_call_runs_a_model_tool_call(sandbox: Sandbox) -> None:
    box = Toolbox(sandbox, {"a": f"{sandbox.worktree}/a", "b": f"{sandbox.worktree}/b"})
    result = await box.call("read", '{"path": "f.txt", "workspace": "a"}')
    assert isinstance(result, ReadResult) and result.text == "     1\thello"
    assert json.loads(result.model_dump_json())["total_lines"] == 1


@pytest.mark.parametrize(
    ("name", "arguments", "error", "text"),
    [
        ("read", {}, "InvalidArguments", "invalid arguments for read: path: Field required"),
        ("read", {"path": "f", "bogus": 1}, "InvalidArguments",
         "invalid arguments for read: bogus: Extra inputs are not permitted"),
        ("grep", {"pattern": "x", "context": -1}, "InvalidArguments",
         "invalid arguments for grep: context: Input should be greater than or equal to 0"),
        ("read", "{not json", "InvalidArguments", None),
        ("rm", {}, "UnknownTool", 'unknown tool "rm"; available: read, write, edit, glob, grep, '
                                  "bash, bash_output, kill_shell, run_code, run_tests, run_lint, "
                                  "run_typecheck, run_failing_tests, run_script, "
                                  "find_definition, find_references, hover, document_symbols, "
                                  "workspace_symbols, diagnostics, rename_symbol, "
                                  "watch_process, watch_process_events, snapshot_create, "
                                  "snapshot_list, snapshot_restore, snapshot_diff"),
        ("read", {"path": "f.txt"}, "WorkspaceError",
         "multi-workspace sandbox: 2 workspaces configured (a, b) — pass `workspace` to pick "
         "one"),
        ("read", {"path": "../b", "workspace": "a"}, "PathOutsideWorkspaceError", None),
    ],
)
async def test_call_turns_failures_into_error_results(
    sandbox: Sandbox, name: str, arguments: Any, error: str, text: str | None
) -> None:
    box = Toolbox(sandbox, {"a": f"{sandbox.worktree}/a", "b": f"{sandbox.worktree}/b"})
    result = await box.call(name, arguments)
    assert isinstance(result, ErrorResult) and not result.ok
    assert result.error == error
    if text is not None:
        assert result.text == text
