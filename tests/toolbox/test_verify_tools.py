"""The verify tools through the toolbox: each workspace gets its own language and toolchain.

Runs on the backends of the live verify tests (tests/verify/backends.py: sandboxes that carry
go, node and the linters), so a backend that can run verify joins here with no change.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import sandlot
from sandlot.tools import ErrorResult, Toolbox, VerifyResult
from sandlot.verify import TestReport
from sandlot.workspaces import mount
from tests.verify import backends

from .conftest import GO_SVC, NODE_LIB

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", params=backends.selected())
async def verify_box(request: pytest.FixtureRequest) -> AsyncIterator[Toolbox]:
    provider: sandlot.IsolatedSandboxProvider
    async with backends.opened(request.param) as provider, provider.session() as sandbox:
        workspaces = await mount(sandbox, {"primary": GO_SVC, "extension": NODE_LIB})
        async with Toolbox(sandbox, workspaces) as box:
            yield box


async def test_each_workspace_gets_its_own_toolchain(verify_box: Toolbox) -> None:
    go = await verify_box.run_tests(workspace="primary")
    node = await verify_box.run_tests(workspace="extension")
    assert isinstance(go.report, TestReport) and isinstance(node.report, TestReport)
    assert (go.report.language, go.report.runner, go.report.passed) == ("go", "go-test", 1)
    assert (node.report.language, node.report.passed) == ("node", 1)
    assert go.report.root == verify_box.workspaces.resolve("primary")
    assert node.report.root == verify_box.workspaces.resolve("extension")
    assert go.passed and node.passed
    assert go.text.startswith("go-test (go) in ")
    vet = await verify_box.run_typecheck(workspace="primary")
    assert (vet.report.language, vet.passed) == ("go", True)


async def test_run_script_runs_in_the_node_workspace_only(verify_box: Toolbox) -> None:
    script = await verify_box.call("run_script", {"name": "test", "workspace": "extension"})
    assert isinstance(script, VerifyResult) and script.passed
    assert "# pass 1" in script.text
    wrong = await verify_box.call("run_script", {"name": "test", "workspace": "primary"})
    assert isinstance(wrong, ErrorResult) and wrong.error == "UnknownScriptError"
    unnamed = await verify_box.call("run_tests", {})
    assert unnamed.text == (
        "multi-workspace sandbox: 2 workspaces configured (extension, primary) — pass "
        "`workspace` to pick one"
    )


async def test_an_edit_then_a_failing_test_points_at_the_line(verify_box: Toolbox) -> None:
    await verify_box.read("main_test.go", workspace="primary")
    await verify_box.edit("main_test.go", '"hello, go (svc 1.2.3)"', '"hello, rust"',
                          workspace="primary")
    try:
        failing = await verify_box.run_tests(workspace="primary")
        assert isinstance(failing.report, TestReport)
        assert (failing.passed, failing.report.failed) == (False, 1)
        failure = failing.report.failures[0]
        assert (failure.name, failure.file, failure.line) == ("TestGreet", "main_test.go", 7)
        assert "FAIL TestGreet at main_test.go:7" in failing.text
        again = await verify_box.call("run_failing_tests", {"workspace": "primary"})
        assert isinstance(again, VerifyResult) and isinstance(again.report, TestReport)
        assert (again.passed, again.report.failed, again.report.passed) == (False, 1, 0)
        assert [f.name for f in again.report.failures] == ["TestGreet"]
    finally:
        await verify_box.edit("main_test.go", '"hello, rust"', '"hello, go (svc 1.2.3)"',
                              workspace="primary")


async def test_the_verify_tools_over_mcp(verify_box: Toolbox) -> None:
    from mcp import Client

    from sandlot.mcp_server import build_server

    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message or "")

    # A progress beat every 10 ms: a warm `go test` (its results cached) ends within 0.2 s,
    # and a run that ends before the first beat reports no progress at all.
    async with Client(build_server(verify_box, progress_interval=0.01)) as client:
        tests = await client.call_tool("run_tests", {"workspace": "primary"},
                                       progress_callback=on_progress)
        assert not tests.is_error and tests.structured_content["passed"] is True
        assert tests.structured_content["report"]["runner"] == "go-test"
        lint = await client.call_tool("run_lint", {"workspace": "primary"})
        assert lint.structured_content["report"]["language"] == "go", lint.content[0].text
        check = await client.call_tool("run_typecheck", {"workspace": "primary"})
        assert check.structured_content["passed"] is True
        script = await client.call_tool("run_script", {"name": "test", "workspace": "extension"})
        assert script.structured_content["passed"] is True
        nothing = await client.call_tool("run_failing_tests", {"workspace": "primary"})
        # The last run passed: nothing runs again, and that is an empty pass, not an error.
        assert not nothing.is_error and nothing.structured_content["passed"] is True
        assert nothing.structured_content["report"]["passed"] == 0
    assert seen and all(m.startswith("run_tests: running") for m in seen)
