"""sandlot's spans and metrics, read back from the OpenTelemetry SDK's in-memory exporter:
names, parents, attributes, the TRACEPARENT a command sees, and that no attribute ever holds a
command's argument or a secret."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import sandlot
from sandlot import Secret
from sandlot.mcp_server import build_server
from sandlot.tools import Toolbox
from tests.helpers import eventually
from tests.telemetry.conftest import Recorded

pytestmark = pytest.mark.anyio

ARGUMENT = "argument-value-7d1e"
SECRET = "secret-value-93ab55"


def by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def parent_of(span: ReadableSpan, spans: tuple[ReadableSpan, ...]) -> ReadableSpan | None:
    if span.parent is None:
        return None
    return next((s for s in spans if s.context.span_id == span.parent.span_id), None)


def assert_no_leak(spans: tuple[ReadableSpan, ...]) -> None:
    for span in spans:
        for value in (span.attributes or {}).values():
            text = str(value)
            assert ARGUMENT not in text and SECRET not in text, (span.name, text)
        assert not span.events, "exceptions are not recorded: their messages quote output"


async def test_lifecycle_exec_and_copy(recorded: Recorded, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("12345")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.txt").write_text("123")
    tracer = trace.get_tracer("test")
    with tracer.start_as_current_span("test-root"):
        async with sandlot.local().session() as sandbox:
            await sandbox.copy_in(tmp_path, f"{sandbox.worktree}/in")
            seen = await sandbox.exec(["printf", "%s|%s", ARGUMENT], env={"TOK": Secret(SECRET)})
            failed = await sandbox.exec('printf %s "$TRACEPARENT"; exit 3')
            with pytest.raises(sandlot.CommandFailed):
                await sandbox.exec("exit 4", check=True)
            timed = await sandbox.exec("sleep 5", timeout=0.2)
    spans = recorded.spans.get_finished_spans()
    root = by_name(spans, "test-root")[0]
    names = [s.name for s in spans]
    assert names.count("sandlot.create") == 1 and names.count("sandlot.close") == 1
    for name in ("sandlot.create", "sandlot.close", "sandlot.copy_in"):
        assert parent_of(by_name(spans, name)[0], spans) is root, name
    close = by_name(spans, "sandlot.close")[0].attributes or {}
    assert close["sandlot.on_close"] == "delete" and close["sandlot.sandbox.provider"] == "local"
    copy = by_name(spans, "sandlot.copy_in")[0].attributes or {}
    assert (copy["sandlot.copy.files"], copy["sandlot.copy.bytes"]) == (2, 8)
    execs = by_name(spans, "sandlot.exec")
    first = execs[0].attributes or {}
    assert first["process.executable.name"] == "printf" and first["process.exit.code"] == 0
    assert first["sandlot.command.length"] == len(f"printf '%s|%s' {ARGUMENT}")
    assert seen.exit_code == 0
    # The command saw its own span's context: a traced program inside joins the trace.
    traceparent = failed.stdout
    second = execs[1]
    assert traceparent.startswith(f"00-{second.context.trace_id:032x}-"
                                  f"{second.context.span_id:016x}-")
    assert (second.attributes or {})["process.exit.code"] == 3
    third = execs[2]
    assert (third.attributes or {})["error.type"] == "CommandFailed"
    assert third.status.status_code == trace.StatusCode.ERROR
    assert timed.timed_out and (execs[3].attributes or {})["error.type"] == "timeout"
    assert all(parent_of(s, spans) is root for s in execs)
    assert_no_leak(spans)


async def test_tool_calls_over_mcp_nest(recorded: Recorded) -> None:
    async with sandlot.local().session() as sandbox:
        box = Toolbox(sandbox, secrets={"TOK": SECRET})
        async with box, Client(build_server(box)) as client:
            await client.call_tool("write", {"path": "f.txt", "content": ARGUMENT})
            await client.call_tool("bash", {"command": f"echo {ARGUMENT} $TOK",
                                            "secrets": ["TOK"]})
            await client.call_tool("read", {"path": "missing.txt"})
    spans = recorded.spans.get_finished_spans()
    call = by_name(spans, "tools/call bash")[0]
    tool = by_name(spans, "execute_tool bash")[0]
    assert parent_of(tool, spans) is call
    assert (tool.attributes or {})["gen_ai.tool.name"] == "bash"
    assert (call.attributes or {})["mcp.method.name"] == "tools/call"
    command = by_name(spans, "sandlot.exec")
    assert any(parent_of(s, spans) is tool for s in command)
    missing = by_name(spans, "tools/call read")[0]
    assert (missing.attributes or {})["error.type"]
    # The tool's own span: error.type only when it failed (OpenTelemetry's conventions).
    read = by_name(spans, "execute_tool read")[0].attributes or {}
    assert read["error.type"] == "ToolError" and "error.type" not in (tool.attributes or {})
    assert_no_leak(spans)


async def test_a_fanout_is_one_trace(recorded: Recorded) -> None:
    async def job(sandbox: sandlot.Sandbox, slot: sandlot.fanout.Slot) -> int:
        result = await sandbox.exec(["echo", ARGUMENT])
        if slot.index == 2:
            raise RuntimeError(SECRET)
        return result.exit_code

    report = await sandlot.fanout.run(job, sandlot.local(), n=3)
    assert [o.stage.value for o in report.outcomes] == ["done", "done", "failed"]
    spans = recorded.spans.get_finished_spans()
    parent = by_name(spans, "sandlot.fanout")[0]
    children = by_name(spans, "sandlot.fanout.sandbox")
    assert len(children) == 3 and all(parent_of(c, spans) is parent for c in children)
    assert len({s.context.trace_id for s in spans}) == 1
    for name in ("sandlot.create", "sandlot.exec", "sandlot.close"):
        assert sorted(parent_of(s, spans).name for s in by_name(spans, name)) == \
            ["sandlot.fanout.sandbox"] * 3  # type: ignore[union-attr]
    failed = next(c for c in children if (c.attributes or {})["sandlot.fanout.index"] == 2)
    assert (failed.attributes or {})["error.type"] == "RuntimeError"
    assert (parent.attributes or {})["sandlot.fanout.failed"] == 1
    assert_no_leak(spans)


async def test_verify_and_forward_spans(recorded: Recorded) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "wordcount"
    async with sandlot.local().session() as sandbox:
        await sandbox.copy_in(example, sandbox.worktree)
        report = await sandlot.verify.run_tests(sandbox)
        listener = await sandbox.start(["python3", "-c", _ECHO])
        await eventually(lambda: "port" in listener.stdout, what="the listener's port")
        port = int(listener.stdout.split()[1])
        async with sandbox.forward_port(port) as address:
            with anyio.fail_after(30):
                async with await anyio.connect_tcp(address.host, address.port) as conn:
                    await conn.send(b"ping")
                    assert await conn.receive(4) == b"ping"
    spans = recorded.spans.get_finished_spans()
    verify = by_name(spans, "sandlot.verify run_tests")[0].attributes or {}
    assert verify["sandlot.verify.language"] == "python"
    assert verify["sandlot.verify.passed"] == report.passed > 0
    await eventually(lambda: bool(by_name(recorded.spans.get_finished_spans(),
                                          "sandlot.forward.connection")),
                     what="the forward connection's span")
    forward = by_name(recorded.spans.get_finished_spans(), "sandlot.forward.connection")[0]
    assert (forward.attributes or {})["server.port"] == port
    assert by_name(spans, "sandlot.start")


_ECHO = (
    "import socket\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
    "print('port', s.getsockname()[1], flush=True)\n"
    "c, _ = s.accept(); c.sendall(c.recv(4)); c.close()\n"
)


def _points(recorded: Recorded) -> dict[str, Any]:
    data = recorded.metrics.get_metrics_data()
    found: dict[str, Any] = {}
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found[metric.name] = list(metric.data.data_points)
    return found


async def test_metrics(recorded: Recorded, tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"x" * 1000)
    async with sandlot.local().session() as sandbox:
        await sandbox.exec("true")
        await sandbox.exec("true")
        await sandbox.copy_in(tmp_path, sandbox.worktree)
        during = _points(recorded)
    after = _points(recorded)
    durations = during["sandlot.exec.duration"]
    assert sum(p.count for p in durations) >= 2
    # Few-valued attributes only: a series per command length would grow without bound.
    assert {tuple(sorted(p.attributes)) for p in durations} == {
        ("process.executable.name", "sandlot.sandbox.provider")}
    active = {tuple(p.attributes.items()): p.value for p in during["sandlot.sandboxes.active"]}
    assert active[(("sandlot.sandbox.provider", "local"),)] >= 1
    copied = sum(p.value for p in during["sandlot.copy.bytes"])
    assert copied >= 1000
    active_after = {tuple(p.attributes.items()): p.value
                    for p in after["sandlot.sandboxes.active"]}
    assert active_after[(("sandlot.sandbox.provider", "local"),)] == \
        active[(("sandlot.sandbox.provider", "local"),)] - 1
