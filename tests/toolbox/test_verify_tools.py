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
from tests.helpers import require
from tests.verify import backends

from .conftest import GO_SVC, NODE_LIB

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module", params=backends.selected())
async def verify_box(request: pytest.FixtureRequest) -> AsyncIterator[Toolbox]:
    name: str = request.param
    preflight = backends.PREFLIGHT.get(name)
    if preflight is not None:
        absent = preflight()
        require(not absent, f"verify tools missing for backend {name}: {', '.join(absent)}")
    provider: sandlot.IsolatedSandboxProvider
    async with backends.REGISTRY[name]() as provider, provider.session() as sandbox:
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
