"""run_tests(coverage=True) for real on the fixture projects, on every verify backend: the exact
line sets of tests/verify/expected.py, checked again against each tool's own report of the
same project read directly (go tool cover -func, coverage report), and the typed error of a
project without a coverage tool."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from mcp import Client

import sandlot
from sandlot import Sandbox
from sandlot.errors import CoverageToolMissingError, VerifyToolFailedError
from sandlot.mcp_server import build_server
from sandlot.tools import Toolbox, VerifyResult
from sandlot.verify import TestReport, run_tests
from sandlot.verify.cli import ranges_text
from sandlot.verify.parsers.paths import relative
from tests.helpers import require
from tests.verify import backends, expected
from tests.verify.conftest import Projects
from tests.verify.support import TOOLS, copy_fixture, path_without

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("fixture", ["go", "python", "node", "node-jest", "node-vitest"])
async def test_line_coverage_is_exact(projects: Projects, fixture: str) -> None:
    sandbox = await projects.get(fixture)
    report = await run_tests(sandbox, coverage=True)
    expected.assert_coverage(fixture, report)
    # Measuring coverage leaves the test results as they are, and nothing in the workspace.
    expected.assert_tests(fixture, report)
    left = await sandbox.exec("ls -A", cwd=sandbox.worktree)
    assert ".coverage" not in left.stdout.split()


async def test_go_agrees_with_go_tool_cover(projects: Projects) -> None:
    sandbox = await projects.get("go")
    report = await run_tests(sandbox, coverage=True)
    assert report.coverage is not None
    # go's own per-function report of the same tests: a function never run (0.0%) starts an
    # uncovered range at its line; a function run whole (100.0%) has no line uncovered.
    own = await sandbox.exec(
        'own=$(mktemp); go test -count=1 -coverprofile="$own" ./... >/dev/null; '
        'go tool cover -func="$own"; rm -f "$own"', cwd=sandbox.worktree)
    rows = re.findall(r"^example\.com/verifyfixture/(\S+):(\d+):\s+\S+\s+([\d.]+)%$",
                      own.stdout, re.M)
    assert rows, own.stdout + own.stderr
    starts = {(f.file, first) for f in report.coverage.files for first, _ in f.uncovered}
    never = {(file, int(line)) for file, line, pct in rows if float(pct) == 0}
    assert never == starts
    for file, line, pct in rows:
        if float(pct) == 100:
            (mine,) = [f for f in report.coverage.files if f.file == file]
            assert not any(a <= int(line) <= b for a, b in mine.uncovered)


async def test_python_agrees_with_coverage_report(projects: Projects) -> None:
    sandbox = await projects.get("python")
    report = await run_tests(sandbox, coverage=True)
    assert report.coverage is not None
    # coverage.py's own table of the same run: Stmts, Miss and Missing per file.
    own = await sandbox.exec(
        'own=$(mktemp -d); export COVERAGE_FILE="$own/.coverage"; python3 -m coverage run -m '
        'pytest -q -p no:cacheprovider >/dev/null; python3 -m coverage report -m; rm -rf "$own"',
        cwd=sandbox.worktree)
    rows = {m[0]: (int(m[1]), int(m[2]), m[3].strip()) for m in re.findall(
        r"^(\S+\.py) +(\d+) +(\d+) +\d+%[ \t]*(.*)$", own.stdout, re.M)}
    assert rows, own.stdout + own.stderr
    assert rows == {f.file: (f.lines, f.lines - f.covered, ranges_text(f.uncovered))
                    for f in report.coverage.files}


#: Each Node runner's own summary of the same tests (istanbul's json-summary), written to a
#: directory of the test's own: on the local backend /tmp is the host's, shared by the parallel
#: workers, so a fixed name let one worker's rm -rf take another's summary away.
OWN_SUMMARY = {
    "node": 'c8 --reporter=json-summary --report-dir="$own" --temp-directory="$own/raw" '
            "npm test",
    "node-jest": 'jest --coverage --coverageReporters=json-summary --coverageDirectory="$own"',
    "node-vitest": "vitest run --coverage.enabled=true --coverage.reporter=json-summary "
                   '--coverage.reportOnFailure=true --coverage.reportsDirectory="$own"',
}


@pytest.mark.parametrize("fixture", sorted(OWN_SUMMARY))
async def test_node_agrees_with_the_runners_summary(projects: Projects, fixture: str) -> None:
    sandbox = await projects.get(fixture)
    report = await run_tests(sandbox, coverage=True)
    assert report.coverage is not None
    own = await sandbox.exec(
        f"own=$(mktemp -d); PATH=$PWD/node_modules/.bin:$PATH {OWN_SUMMARY[fixture]} "
        '>/dev/null 2>&1; cat "$own/coverage-summary.json"; rm -rf "$own"',
        cwd=sandbox.worktree)
    summary = json.loads(own.stdout)
    theirs = {relative(name, sandbox.worktree): (row["lines"]["total"], row["lines"]["covered"])
              for name, row in summary.items() if name != "total"}
    assert theirs == {f.file: (f.lines, f.covered) for f in report.coverage.files}
    total = summary["total"]["lines"]
    assert (total["total"], total["covered"]) == (report.coverage.lines, report.coverage.covered)


async def test_node_without_c8_says_what_to_install(projects: Projects) -> None:
    # The Node half of the polyglot fixture runs node --test and has no c8 (nor has the PATH).
    sandbox = await projects.get("polyglot")
    with pytest.raises(CoverageToolMissingError) as caught:
        await run_tests(sandbox, language="node", coverage=True)
    assert caught.value.binary == "c8"
    assert str(caught.value).startswith("run_tests: coverage=True needs c8, which the sandbox "
                                        "does not have (PATH: ")
    assert str(caught.value).endswith("); install c8 in the project (npm install -D c8) or in "
                                      "the sandbox (npm install -g c8), or run without coverage")


async def test_vitest_without_a_coverage_provider(projects: Projects) -> None:
    sandbox = await projects.get("node-vitest")
    # The provider moved away for this test only (a fresh copy of node_modules costs seconds).
    provider, away = "node_modules/@vitest/coverage-v8", f"/tmp/coverage-v8-{uuid.uuid4().hex}"
    await sandbox.exec(["mv", provider, away], cwd=sandbox.worktree, check=True)
    try:
        with pytest.raises(CoverageToolMissingError) as caught:
            await run_tests(sandbox, coverage=True)
    finally:
        await sandbox.exec(["mv", away, provider], cwd=sandbox.worktree, check=True)
    assert caught.value.binary == "@vitest/coverage-v8"
    assert "npm install -D @vitest/coverage-v8 (the version of its vitest)" in str(caught.value)


def _tarpaulin() -> None:
    require((TOOLS / "bin" / "cargo-tarpaulin").exists(),
            "cargo-tarpaulin missing: run scripts/setup.d/41-cargo-tarpaulin.sh")


async def test_rust_agrees_with_tarpaulins_own_summary(
    fresh: Sandbox, verify_provider: sandlot.IsolatedSandboxProvider
) -> None:
    _tarpaulin()
    await copy_fixture(fresh, "rust", "rust-uncovered")
    # A Docker container's default seccomp profile (the verify backend's docker provider sets
    # no security_opt) refuses personality(ADDR_NO_RANDOMIZE): tarpaulin's ptrace engine cannot
    # run, and says so -- naming the option that lets it -- instead of reporting no tests.
    refused = await fresh.exec("setarch x86_64 -R true")
    default_docker = isinstance(verify_provider, sandlot.DockerProvider)
    assert (refused.exit_code != 0) == default_docker, refused.stderr
    if default_docker:
        assert "Operation not permitted" in refused.stderr
        untraced = r"could not trace the tests.*seccomp"
        with pytest.raises(VerifyToolFailedError, match=untraced) as caught:
            await run_tests(fresh, coverage=True)
        assert 'sandlot.docker(..., security_opt=["seccomp=unconfined"])' in str(caught.value)
        assert '"security_opt": ["seccomp=unconfined"]' in str(caught.value)
        return
    await _assert_agrees_with_tarpaulin(fresh)


async def test_rust_coverage_on_docker_with_seccomp_unconfined() -> None:
    """The refusal's advice followed: a docker sandbox made with
    security_opt=["seccomp=unconfined"] lets tarpaulin trace, with the same result as local."""
    if "docker" not in backends.selected():
        pytest.skip("docker is not among the selected verify backends")
    _tarpaulin()
    async with (
        backends.opened("docker", security_opt=["seccomp=unconfined"]) as provider,
        provider.session() as sandbox,
    ):
        await copy_fixture(sandbox, "rust", "rust-uncovered")
        traced = await sandbox.exec("setarch x86_64 -R true")
        assert traced.exit_code == 0, traced.stderr
        await _assert_agrees_with_tarpaulin(sandbox)


async def _assert_agrees_with_tarpaulin(sandbox: Sandbox) -> None:
    """Coverage of rust+rust-uncovered in `sandbox` (where tarpaulin can trace): the exact
    lines and test results, tarpaulin's own table, and nothing left in the worktree."""
    report = await run_tests(sandbox, coverage=True)
    expected.assert_coverage("rust+rust-uncovered", report)
    expected.assert_tests("rust", report)
    assert report.coverage is not None and report.coverage.tool == "tarpaulin"
    # tarpaulin's own table, printed by the same run: `|| src/lib.rs: 7/7`.
    own = dict(re.findall(r"^\|\| (\S+): (\d+/\d+)", report.stdout, re.M))
    assert own == {f.file: f"{f.covered}/{f.lines}" for f in report.coverage.files}
    left = await sandbox.exec("ls -A", cwd=sandbox.worktree)
    assert sorted(left.stdout.split()) == ["Cargo.lock", "Cargo.toml", "src", "tests"]


async def test_rust_without_tarpaulin_says_what_to_install(fresh: Sandbox) -> None:
    await copy_fixture(fresh, "rust")
    with pytest.raises(CoverageToolMissingError) as caught:
        await run_tests(fresh, coverage=True, env={"PATH": path_without("cargo-tarpaulin")})
    assert caught.value.binary == "cargo-tarpaulin"
    assert str(caught.value).endswith(
        "; install it in the sandbox: cargo install cargo-tarpaulin --locked "
        "(scripts/setup.d/41-cargo-tarpaulin.sh), or run without coverage")


async def test_python_without_coverage_py_says_what_to_install(fresh: Sandbox) -> None:
    root = await copy_fixture(fresh, "python")
    # The system's python3 has neither coverage.py nor pytest-cov.
    bare = {"PATH": "/usr/local/bin:/usr/bin:/bin"}
    probe = await fresh.exec(["python3", "-c", "import coverage"], env=bare, cwd=root)
    assert probe.exit_code != 0, "this machine's system python3 has coverage.py"
    with pytest.raises(CoverageToolMissingError) as caught:
        await run_tests(fresh, coverage=True, env=bare)
    assert caught.value.binary == "coverage"
    assert str(caught.value) == (
        "run_tests: coverage=True needs coverage, which the sandbox does not have; install "
        "coverage.py where the tests run (`.venv/bin/pip install coverage` in the project, or "
        "pip install coverage), or run without coverage"
    )


async def test_the_agent_tool_takes_coverage(projects: Projects) -> None:
    sandbox = await projects.get("go")
    async with Toolbox(sandbox) as box:
        result = await box.call("run_tests", {"coverage": True})
        plain = await box.call("run_tests", {})
    lines = result.text.splitlines()
    assert lines[-2:] == [
        "coverage (go-cover): 56.2% of lines (9/16)",
        "  calc/calc.go: 46.1% (6/13), not run: 20-23, 26-28",
    ]
    assert isinstance(result, VerifyResult) and isinstance(plain, VerifyResult)
    assert isinstance(result.report, TestReport) and isinstance(plain.report, TestReport)
    expected.assert_coverage("go", result.report)
    assert plain.report.coverage is None


async def test_the_mcp_tool_takes_coverage(projects: Projects) -> None:
    sandbox = await projects.get("python")
    async with Toolbox(sandbox) as box, Client(build_server(box)) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert listed["run_tests"].input_schema["properties"]["coverage"]["type"] == "boolean"
        result = await client.call_tool("run_tests", {"coverage": True})
    assert not result.is_error
    assert result.structured_content is not None
    coverage = result.structured_content["report"]["coverage"]
    assert coverage["tool"] == "coverage.py"
    assert {f["file"]: (f["lines"], f["covered"], [tuple(r) for r in f["uncovered"]])
            for f in coverage["files"]} == expected.COVERAGE["python"]
