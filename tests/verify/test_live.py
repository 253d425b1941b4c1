"""The verify tools run for real on the fixture projects, with the real toolchains, on every
backend in tests/verify/backends.py (same bodies everywhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandlot import Sandbox
from sandlot.errors import (
    AmbiguousLanguageError,
    ConfigurationError,
    LanguageNotDetectedError,
    LinterNotInstalledError,
    NoProjectDetectedError,
    NoTestRunError,
    UnknownLanguageError,
    UnknownScriptError,
    VerifyToolFailedError,
    VerifyToolMissingError,
)
from sandlot.verify import (
    detect_all,
    last_test_failures,
    run_failing_tests,
    run_lint,
    run_script,
    run_tests,
    run_typecheck,
)
from tests.verify import expected
from tests.verify.conftest import Projects
from tests.verify.support import TOOLS, copy_fixture, path_without

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("fixture", "languages"),
    [
        ("go", ["go"]),
        ("rust", ["rust"]),
        ("python", ["python"]),
        ("node", ["node"]),
        ("polyglot", ["go", "node"]),
    ],
)
async def test_detect_all(projects: Projects, fixture: str, languages: list[str]) -> None:
    sandbox = await projects.get(fixture)
    assert await detect_all(sandbox) == languages


@pytest.mark.parametrize(
    "fixture", ["go", "rust", "python", "node", "node-jest", "node-vitest", "node-composite"]
)
async def test_run_tests_then_rerun_failures(projects: Projects, fixture: str) -> None:
    sandbox = await projects.get(fixture)
    report = await run_tests(sandbox)
    expected.assert_tests(fixture, report)
    assert report.root == sandbox.worktree
    assert last_test_failures(sandbox) == report.failures

    again = await run_failing_tests(sandbox)
    assert (again.passed, again.failed, again.skipped) == expected.RERUN_COUNTS[fixture]
    assert sorted(expected.failure_rows(again), key=str) == sorted(
        expected.failure_rows(report), key=str
    )
    assert last_test_failures(sandbox) == again.failures


@pytest.mark.parametrize("fixture", sorted(c for c in expected.LINT if "+" not in c))
async def test_run_lint(projects: Projects, fixture: str) -> None:
    report = await run_lint(await projects.get(fixture))
    expected.assert_findings("lint", fixture, report)


@pytest.mark.parametrize("fixture", sorted(c for c in expected.TYPECHECK if "+" not in c))
async def test_run_typecheck(projects: Projects, fixture: str) -> None:
    report = await run_typecheck(await projects.get(fixture))
    expected.assert_findings("typecheck", fixture, report)


async def test_polyglot_needs_a_language(projects: Projects) -> None:
    sandbox = await projects.get("polyglot")
    for tool in (run_tests, run_lint, run_typecheck):
        with pytest.raises(AmbiguousLanguageError) as caught:
            await tool(sandbox)
        assert str(caught.value) == (
            "polyglot workspace: 2 project types detected (go, node) — pass `language` to "
            "pick one"
        )
    with pytest.raises(AmbiguousLanguageError):
        await run_script(sandbox, "test")
    with pytest.raises(LanguageNotDetectedError) as not_there:
        await run_tests(sandbox, language="rust")
    assert str(not_there.value) == 'language "rust" not detected in workspace; detected: go, node'
    with pytest.raises(UnknownLanguageError) as unknown:
        await run_tests(sandbox, language="java")
    assert str(unknown.value) == 'unknown language "java"; supported: go, node, python, rust'


async def test_polyglot_runs_the_language_asked_for(projects: Projects) -> None:
    sandbox = await projects.get("polyglot")
    go = await run_tests(sandbox, language="go")
    assert go.language == "go"
    expected.assert_tests("polyglot-go", go)
    node = await run_tests(sandbox, language="  NODE ")
    assert node.language == "node" and node.runner == "node-test"
    expected.assert_tests("polyglot-node", node)
    # The last report at this root is node's now; asking for go's is an error, not a guess.
    with pytest.raises(NoTestRunError, match="was node, not go"):
        last_test_failures(sandbox, language="go")


async def test_no_marker_says_what_was_looked_for(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "go", dest=f"{fresh.worktree}/svc")
    # A marker in a subdirectory does not count ...
    assert await detect_all(fresh) == []
    with pytest.raises(NoProjectDetectedError) as caught:
        await run_tests(fresh)
    assert str(caught.value) == (
        f"run_tests: no detector matched the workspace at {fresh.worktree}: looked for go.mod "
        "(go), Cargo.toml (rust), package.json (node), pyproject.toml or setup.py (python) at "
        "the workspace root (subdirectories do not count); point root/workspace at the "
        "project's top directory"
    )
    with pytest.raises(LanguageNotDetectedError, match="detected: none"):
        await run_lint(fresh, language="go")
    # ... but pointing root at it does, relative to the worktree or absolute.
    assert await detect_all(fresh, "svc") == ["go"]
    report = await run_typecheck(fresh, root=f"{fresh.worktree}/svc")
    expected.assert_findings("typecheck", "go", report)
    assert report.root == f"{fresh.worktree}/svc"
    with pytest.raises(ConfigurationError, match="cannot be inspected"):
        await run_tests(fresh, root="does-not-exist")


class _Workspaces:
    """The shape of sandlot.workspaces.WorkspaceSet that the verify tools rely on."""

    def __init__(self, roots: dict[str, str]) -> None:
        self.roots = roots

    def resolve(self, name: str | None) -> str:
        assert name is not None
        return self.roots[name]


async def test_workspaces_pick_their_own_toolchain(fresh: Sandbox) -> None:
    api, lib = f"{fresh.worktree}/api", f"{fresh.worktree}/lib"
    await copy_fixture(fresh, "go", dest=api)
    await copy_fixture(fresh, "python", dest=lib)
    spaces = _Workspaces({"api": api, "lib": lib})
    go = await run_lint(fresh, workspace="api", workspaces=spaces)
    expected.assert_findings("lint", "go", go)
    py = await run_typecheck(fresh, workspace="lib", workspaces=spaces)
    expected.assert_findings("typecheck", "python", py)
    tests = await run_tests(fresh, workspace="lib", workspaces=spaces)
    assert tests.language == "python" and tests.root == lib
    assert last_test_failures(fresh, workspace="lib", workspaces=spaces) == tests.failures
    with pytest.raises(NoTestRunError):
        last_test_failures(fresh, workspace="api", workspaces=spaces)
    with pytest.raises(ConfigurationError, match="no workspaces to resolve it"):
        await run_tests(fresh, workspace="api")


@pytest.mark.parametrize(
    ("fixture", "overlay"), [("go", "go-broken"), ("rust", "rust-broken")]
)
async def test_code_that_does_not_compile(fresh: Sandbox, fixture: str, overlay: str) -> None:
    await copy_fixture(fresh, fixture, overlay)
    case = f"{fixture}+{overlay}"
    tests = await run_tests(fresh)
    expected.assert_tests(case, tests)
    assert any(f.kind == "build" for f in tests.failures)
    expected.assert_findings("typecheck", case, await run_typecheck(fresh))
    if case in expected.LINT:
        expected.assert_findings("lint", case, await run_lint(fresh))


async def test_rust_benches_that_need_nightly_are_skipped(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "rust", "rust-nightly-bench")
    for report in (await run_typecheck(fresh), await run_lint(fresh)):
        assert [s.target for s in report.skipped] == ["bench nightly"]
        assert "bench stable" in report.checked
        assert report.error_count == 0
        assert ("benches/stable.rs", 5, "unused_variables") in {
            (f.file, f.line, f.rule) for f in report.findings
        }


async def test_a_failed_step_stops_what_and_joins_it(fresh: Sandbox) -> None:
    # `&&` after a failing build: the tests behind it do not run, as in the shell; `;` runs
    # the next one anyway. No package is needed: node's own runner.
    scripts = {
        "test": "npm run build && npm run test:unit; npm run test:more",
        "build": "node -e \"console.error('build broke'); process.exit(3)\"",
        "test:unit": "node --test unit/",
        "test:more": "node --test more/",
    }
    test = (
        'const test = require("node:test");\n'
        'test("fails", () => { throw new Error("more is broken"); });\n'
    )
    await fresh.exec(
        ["sh", "-c", 'mkdir unit more && printf %s "$1" > package.json && '
         'printf %s "$2" > more/more.test.js && cp more/more.test.js unit/',
         "sh", json.dumps({"name": "steps", "scripts": scripts}), test],
        check=True,
    )
    report = await run_tests(fresh)
    assert report.runner == "node-test"
    rows = [(f.step, f.kind, f.file, f.line) for f in report.failures]
    assert rows == [("build", "build", None, None), ("test:more", "test", "more/more.test.js", 2)]
    assert report.failures[0].message == "exit 3: build broke"
    assert report.notes == [
        "test:unit: `node --test unit/` did not run: a step before it failed and `&&` joined them"
    ]
    again = await run_failing_tests(fresh)
    assert [(f.step, f.kind) for f in again.failures] == [("build", "build"), ("test:more", "test")]


async def test_a_panicking_go_test_is_located(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "go", "go-panic")
    report = await run_tests(fresh)
    expected.assert_tests("go+go-panic", report)
    panic = next(f for f in report.failures if f.name == "TestPanics")
    assert panic.message.startswith("panic: assignment to entry in nil map")


async def test_missing_tools_are_named(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "go")
    without_lint, without_go = path_without("golangci-lint"), path_without("go")
    with pytest.raises(LinterNotInstalledError) as lint:
        await run_lint(fresh, env={"PATH": without_lint})
    assert str(lint.value) == not_installed("run_lint", "golangci-lint", without_lint)
    assert lint.value.binary == "golangci-lint"
    with pytest.raises(VerifyToolMissingError) as tests:
        await run_tests(fresh, env={"PATH": without_go})
    assert str(tests.value) == not_installed("run_tests", "go", without_go)
    with pytest.raises(VerifyToolMissingError) as vet:
        await run_typecheck(fresh, env={"PATH": without_go})
    assert str(vet.value) == not_installed("run_typecheck", "go", without_go)


def not_installed(caller: str, binary: str, path: str) -> str:
    """The one wording of a missing tool (issue 26 item 6): the sandbox's PATH, and the fix."""
    return (
        f"{caller}: {binary} is not installed: not found on the sandbox's PATH ({path}); "
        'install it in the sandbox, or give the tool a PATH that has it: env={"PATH": "..."} '
        "in Python, --env PATH=... on the command line"
    )


async def test_python_tools_missing_name_the_path_searched(fresh: Sandbox) -> None:
    # issue 26 item 6: ruff and mypy installed somewhere the sandbox's PATH does not reach were
    # "linter not installed: ruff" and "mypy: not found on PATH", two wordings, no PATH named.
    await copy_fixture(fresh, "python")
    bare = ":".join(p for p in path_without("ruff").split(":")
                    if not (Path(p) / "mypy").exists())
    searched = f"{fresh.worktree}/.venv/bin:{bare}"  # the project's .venv comes first
    with pytest.raises(LinterNotInstalledError) as lint:
        await run_lint(fresh, env={"PATH": bare})
    assert str(lint.value) == not_installed("run_lint", "ruff", searched)
    with pytest.raises(VerifyToolMissingError) as check:
        await run_typecheck(fresh, env={"PATH": bare})
    assert str(check.value) == not_installed("run_typecheck", "mypy", searched)
    # Doing what the message says works.
    report = await run_lint(fresh, env={"PATH": f"{TOOLS / 'bin'}:{bare}"})
    assert report.tool == "ruff" and report.findings


async def test_node_tools_missing_from_the_project(projects: Projects) -> None:
    # The jest fixture has no eslint or typescript in node_modules, and no lint script.
    sandbox = await projects.get("node-jest")
    with pytest.raises(LinterNotInstalledError) as lint:
        await run_lint(sandbox)
    # Searched: the project's node_modules/.bin, then the sandbox's own PATH.
    assert str(lint.value).startswith(
        f"run_lint: eslint is not installed: not found on the sandbox's PATH "
        f"({sandbox.worktree}/node_modules/.bin:"
    )
    assert str(lint.value).endswith(
        'env={"PATH": "..."} in Python, --env PATH=... on the command line'
    )
    # Neither a typecheck script nor a tsconfig.json: no type checker, said so, nothing ran.
    report = await run_typecheck(sandbox)
    assert report.configured is False and "no type checker configured" in report.note


async def test_a_crashed_linter_is_an_error_with_its_stderr(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "python", "python-badconfig")
    with pytest.raises(VerifyToolFailedError) as caught:
        await run_lint(fresh)
    assert caught.value.exit_code == 2
    assert "ruff failed (exit 2) instead of reporting findings" in str(caught.value)
    assert "Failed to parse" in caught.value.stderr


async def test_run_script(projects: Projects) -> None:
    sandbox = await projects.get("node")
    result = await run_script(sandbox, "greet")
    assert result.ok and result.exit_code == 0
    assert "hello from greet" in result.stdout
    assert result.command == "npm run greet"
    with pytest.raises(UnknownScriptError) as caught:
        await run_script(sandbox, "deploy")
    assert str(caught.value) == (
        f'run_script: no script "deploy" in package.json at {sandbox.worktree}; defined: '
        "greet, lint, test, typecheck"
    )
    go = await projects.get("go")
    with pytest.raises(UnknownScriptError, match=r"runs package\.json scripts"):
        await run_script(go, "test")


async def test_rerun_needs_a_previous_run(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "python")
    with pytest.raises(NoTestRunError) as caught:
        await run_failing_tests(fresh)
    assert str(caught.value) == (
        f"run_failing_tests: no test run recorded for {fresh.worktree} in this sandbox; call "
        "run_tests first"
    )


async def test_rerunning_the_failures_of_a_passing_run_is_an_empty_pass(fresh: Sandbox) -> None:
    # issue 26 item 11: "run_tests, then run_failing_tests until ok" needs no special case for
    # a run that passed; this raised ConfigurationError.
    test = 'const test = require("node:test");\ntest("fine", () => {});\n'
    await fresh.exec(
        ["sh", "-c", 'printf %s "$1" > package.json && printf %s "$2" > ok.test.js',
         "sh", json.dumps({"name": "ok", "scripts": {"test": "node --test"}}), test],
        check=True,
    )
    report = await run_tests(fresh)
    assert report.ok and report.passed == 1
    again = await run_failing_tests(fresh)
    assert again.ok and (again.passed, again.failed, again.skipped) == (0, 0, 0)
    assert again.failures == [] and again.runner == report.runner
    assert again.notes == ["nothing ran: the report had no failures to run again"]
