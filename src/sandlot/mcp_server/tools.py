"""The toolbox as an MCP server: its tools, their annotations, calls and progress.

One source of truth: every tool's input schema is the one `Toolbox.tool_schemas()` gives
agent frameworks (the pydantic argument models), so a tool looks the same over MCP and
in-process. A call always answers with a result: what went wrong is a tool error the model
reads (`isError`), never a protocol error.
"""

from __future__ import annotations

import contextvars
import importlib.metadata
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server

from .. import telemetry
from ..errors import redact
from ..secrets import Scrubber
from ..tools import TOOLS, ErrorResult, Toolbox, ToolResult

#: Tools that can destroy or replace what is in the workspace (MCP's destructiveHint).
DESTRUCTIVE = frozenset({"write", "edit", "bash", "kill_shell", "run_code", "run_script",
                         "watch_process", "snapshot_restore", "rename_symbol"})
#: Tools whose repeated call with the same arguments changes nothing more.
IDEMPOTENT = frozenset({"read", "glob", "grep", "write", "snapshot_list", "snapshot_diff",
                        "snapshot_restore", "find_definition", "find_references", "hover",
                        "document_symbols", "workspace_symbols", "diagnostics"})
#: Tools that run arbitrary programs, which may reach beyond the sandbox's files.
OPEN_WORLD = frozenset({"bash", "run_code", "run_script", "watch_process"})
#: Calls that can run long: they send progress notifications while they run (the navigation
#: tools while a cold language server starts and indexes: its own progress messages).
LONG = frozenset({"bash", "run_code", "run_tests", "run_lint", "run_typecheck",
                  "run_failing_tests", "run_script", "find_definition", "find_references",
                  "hover", "document_symbols", "workspace_symbols", "diagnostics",
                  "rename_symbol"})


@dataclass
class _CallProgress:
    """What the running call last printed (set from the toolbox's output callback)."""

    last_line: str = ""
    lines: int = 0
    started: float = field(default_factory=time.monotonic)


_current: contextvars.ContextVar[_CallProgress | None] = contextvars.ContextVar(
    "sandlot_mcp_call", default=None)


def _on_output(line: str) -> None:
    progress = _current.get()
    if progress is not None and line.strip():
        progress.lines += 1
        progress.last_line = line.rstrip("\n")[:200]


def tool_list(box: Toolbox) -> list[types.Tool]:
    """The toolbox's tools as MCP tools, with the same input schemas."""
    tools: list[types.Tool] = []
    for schema in box.tool_schemas():
        function = schema["function"]
        name = function["name"]
        tools.append(types.Tool(
            name=name,
            description=function["description"],
            input_schema=function["parameters"],
            annotations=types.ToolAnnotations(
                title=name.replace("_", " "),
                read_only_hint=not TOOLS[name].mutating,
                destructive_hint=name in DESTRUCTIVE,
                idempotent_hint=name in IDEMPOTENT,
                open_world_hint=name in OPEN_WORLD,
            ),
        ))
    return tools


def build_server(box: Toolbox, *, progress_interval: float = 1.0,
                 instructions: str | None = None) -> Server[Any]:
    """An MCP server offering `box`'s tools (the caller owns the sandbox and the box)."""
    box.on_output = _on_output

    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tool_list(box))

    async def call_tool(ctx: ServerRequestContext[Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        # OpenTelemetry's MCP conventions: `{method} {tool}`, the tool call inside it.
        attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": name}
        with telemetry.span(f"tools/call {name}", attributes) as current:
            try:
                result = await _with_progress(ctx, name, progress_interval,
                                              lambda: box.call(name, params.arguments or {}),
                                              box.scrubber)
            except Exception as exc:  # a tool call must answer, whatever broke underneath
                text = box.scrubber.text(redact(f"{name} failed: {type(exc).__name__}: {exc}"))
                result = ErrorResult(tool=name, error=type(exc).__name__, text=text)
            if isinstance(result, ErrorResult):
                telemetry.set_attributes(current, {"error.type": result.error})
        return types.CallToolResult(
            content=[types.TextContent(text=result.text)],
            structured_content=result.model_dump(mode="json"),
            is_error=isinstance(result, ErrorResult),
        )

    return Server(
        "sandlot", version=importlib.metadata.version("sandlot"), title="sandlot sandbox tools",
        instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool,
    )


async def _with_progress(ctx: ServerRequestContext[Any], name: str, interval: float,
                         call: Callable[[], Awaitable[ToolResult]],
                         scrubber: Scrubber) -> ToolResult:
    """Run `call`; while a long one runs, tell the client every `interval` seconds how long
    it has run and the last line it printed (a no-op when the client asked for no progress).
    """
    if name not in LONG:
        return await call()
    scrub = scrubber.text
    state = _CallProgress()
    token = _current.set(state)

    async def beat() -> None:
        while True:
            await anyio.sleep(interval)
            elapsed = time.monotonic() - state.started
            message = f"{name}: running {elapsed:.0f}s"
            if state.last_line:
                message += f", {state.lines} lines of output; last: {state.last_line}"
            # The lines come scrubbed (the tools run with scrub=True); the cut at 200
            # characters could still end inside a form, so the message is scrubbed whole too.
            await ctx.session.report_progress(round(elapsed, 1), None, scrub(message))

    outcome: ToolResult | None = None
    failure: Exception | None = None
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(beat)
            try:
                outcome = await call()
            except Exception as exc:  # raised below, not wrapped in an ExceptionGroup
                failure = exc
            finally:
                group.cancel_scope.cancel()
    finally:
        _current.reset(token)
    if failure is not None:
        raise failure
    assert outcome is not None
    return outcome
