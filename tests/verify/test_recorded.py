"""The parsers, judged on output recorded from the real tools (scripts/record-verify-fixtures.py).

Each recording holds the exact plan verify ran and what the tool printed; replaying it through
the same report builders the live tools use must give the fixtures' known results.
"""

from __future__ import annotations

import json

import pytest

from sandlot.errors import VerifyToolFailedError
from sandlot.verify.detector import Detector, detectors_for
from sandlot.verify.findings import LintReport, TestReport
from sandlot.verify.go import run_pattern
from sandlot.verify.node import vitest_runs_once
from sandlot.verify.plan import ToolRun
from sandlot.verify.rust import doctest_filter
from sandlot.verify.tools import build_findings_report, build_test_report
from tests.verify import expected
from tests.verify.support import RECORDED

DETECTORS: dict[str, Detector] = {
    d.language: d
    for d in detectors_for(
        frozenset({"go.mod", "Cargo.toml", "package.json", "pyproject.toml"})
    )
}


def load(name: str) -> ToolRun:
    path = RECORDED / f"{name}.json"
    return ToolRun.model_validate(json.loads(path.read_text()))


def replay_tests(name: str) -> TestReport:
    run = load(name)
    return build_test_report(DETECTORS[run.plan.language], run)


def replay_findings(name: str) -> LintReport:
    run = load(name)
    return build_findings_report(DETECTORS[run.plan.language], run, f"run_{run.plan.kind}")


@pytest.mark.parametrize("case", sorted(expected.TESTS))
def test_test_reports(case: str) -> None:
    report = replay_tests(f"{case}-tests")
    expected.assert_tests(case, report)
    # Every failure of a test that ran can be selected again by its runner.
    assert all(f.selector for f in report.failures if f.kind == "test")


@pytest.mark.parametrize("case", sorted(expected.RERUN_COUNTS))
def test_rerun_reports(case: str) -> None:
    report = replay_tests(f"{case}-rerun")
    assert (report.passed, report.failed, report.skipped) == expected.RERUN_COUNTS[case]
    assert sorted(expected.failure_rows(report), key=str) == sorted(
        expected.TESTS[case][1], key=str
    )


@pytest.mark.parametrize("case", sorted(expected.LINT))
def test_lint_reports(case: str) -> None:
    expected.assert_findings("lint", case, replay_findings(f"{case}-lint"))


@pytest.mark.parametrize("case", sorted(expected.TYPECHECK))
def test_typecheck_reports(case: str) -> None:
    expected.assert_findings("typecheck", case, replay_findings(f"{case}-typecheck"))


def test_build_failures_are_marked_as_such() -> None:
    go = replay_tests("go+go-broken-tests")
    build = [f for f in go.failures if f.kind == "build"]
    assert [f.package for f in build] == ["example.com/verifyfixture/broken"]
    assert "cannot use \"three\"" in build[0].message
    rust = replay_tests("rust+rust-broken-tests")
    assert [f.kind for f in rust.failures] == ["build"]
    assert rust.failures[0].message == "E0308: mismatched types"


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("python+python-badconfig-lint", "Failed to parse"),
        ("node+node-badconfig-lint", "broken eslint config"),
    ],
)
def test_a_crashed_linter_raises_with_its_stderr(name: str, needle: str) -> None:
    run = load(name)
    assert run.exit_code == 2
    with pytest.raises(VerifyToolFailedError) as caught:
        replay_findings(name)
    assert "failed (exit 2) instead of reporting findings" in str(caught.value)
    assert needle in caught.value.stderr or needle in str(caught.value)
    assert caught.value.exit_code == 2


def test_finding_exit_code_with_nothing_parsed_is_a_failure_not_a_clean_report() -> None:
    # The exit code says "findings", but the output holds none: the tool did not do its job.
    run = load("python-lint").model_copy(update={"stdout": "[]"})
    with pytest.raises(VerifyToolFailedError, match="none could be read"):
        build_findings_report(DETECTORS["python"], run, "run_lint")
    tests = load("go-tests").model_copy(update={"stdout": ""})
    with pytest.raises(VerifyToolFailedError, match="none could be read"):
        build_test_report(DETECTORS["go"], tests)


def test_missing_report_file_is_a_failure() -> None:
    run = load("node-jest-tests").model_copy(update={"report": None})
    with pytest.raises(VerifyToolFailedError, match="none could be read"):
        build_test_report(DETECTORS["node"], run)


def test_unexpected_exit_code_is_a_failure() -> None:
    run = load("go-lint").model_copy(update={"exit_code": 3})
    with pytest.raises(VerifyToolFailedError, match=r"golangci-lint failed \(exit 3\)"):
        build_findings_report(DETECTORS["go"], run, "run_lint")


def test_reports_are_json_and_keep_raw_output() -> None:
    report = replay_tests("go-tests")
    data = json.loads(report.model_dump_json())
    assert data["ok"] is False
    assert data["failures"][0]["file"] == "calc/calc_test.go"
    assert '"Action":"run"' in data["stdout"]
    lint = replay_findings("rust-lint")
    assert lint.warning_count == 2 and lint.error_count == 0
    assert json.loads(lint.model_dump_json())["ok"] is False


def test_every_recording_is_used() -> None:
    used = {f"{c}-tests" for c in expected.TESTS}
    used |= {f"{c}-rerun" for c in expected.RERUN_COUNTS}
    used |= {f"{c}-lint" for c in expected.LINT}
    used |= {f"{c}-typecheck" for c in expected.TYPECHECK}
    used |= {f"{c}-coverage" for c in expected.COVERAGE} | {
        "rust+rust-broken-coverage", "node-composite-coverage"}
    used |= {"python+python-badconfig-lint", "node+node-badconfig-lint",
             "go+go-many-findings-lint", "rust+rust-nightly-bench-lint",
             "rust+rust-nightly-bench-typecheck"}
    used |= {f"corpus-{p}-{kind}" for p in CORPUS_RERUNS for kind in ("tests", "rerun")}
    assert {p.stem for p in RECORDED.glob("*.json")} == used


def test_golangci_lint_findings_are_complete_past_its_default_caps() -> None:
    # Ground truth: every unchecked os.Remove line of the overlay's source (60 of them, one
    # text), far past golangci-lint's defaults of 50 per linter and 3 with the same text.
    source = (RECORDED.parent / "overlays" / "go-many-findings" / "many" / "many.go").read_text()
    lines = [n for n, text in enumerate(source.splitlines(), 1) if "os.Remove(" in text]
    assert len(lines) == 60
    report = replay_findings("go+go-many-findings-lint")
    found = sorted(f.line for f in report.findings if f.file == "many/many.go")
    assert found == lines
    assert {f.rule for f in report.findings if f.file == "many/many.go"} == {"errcheck"}


def test_rust_failures_keep_their_own_test_binary() -> None:
    report = replay_tests("rust+rust-dupnames-tests")
    shared = {f.package: f for f in report.failures if f.name == "test_parse"}
    assert set(shared) == {"tests/alpha.rs", "tests/beta.rs"}
    assert "alpha disagrees" in shared["tests/alpha.rs"].message
    assert "beta could not parse" in shared["tests/beta.rs"].message
    assert all(f.package for f in report.failures)
    rerun = load("rust+rust-dupnames-rerun").plan.argv
    flags = rerun[rerun.index("--message-format=json") + 1 : rerun.index("--")]
    assert flags == ["--lib", "--test", "alpha", "--test", "beta", "--test", "integration"]


@pytest.mark.parametrize("kind", ["lint", "typecheck"])
def test_rust_benches_that_need_nightly_are_skipped_not_failures(kind: str) -> None:
    # Recorded from stable cargo: benches/nightly.rs has `#![feature(test)]` (E0554 on stable),
    # benches/stable.rs builds and has one planted warning.
    report = replay_findings(f"rust+rust-nightly-bench-{kind}")
    assert report.exit_code == 101  # cargo's own verdict, kept in the raw result
    assert [s.target for s in report.skipped] == ["bench nightly"]
    assert "nightly" in report.skipped[0].reason
    assert "bench stable" in report.checked and "lib rustfix" in report.checked
    assert "bench nightly" not in report.checked
    assert report.error_count == 0
    assert any(f.file == "benches/stable.rs" and f.rule == "unused_variables"
               for f in report.findings)
    assert not any(f.file.startswith("benches/nightly") for f in report.findings)
    assert "--keep-going" in load(f"rust+rust-nightly-bench-{kind}").plan.argv


def test_a_composite_node_script_reports_each_runner_and_its_script() -> None:
    report = replay_tests("node-composite-tests")
    assert report.runner == "node-test+mocha"
    by_step = {f.step: f for f in report.failures}
    assert set(by_step) == {"test:unit", "test:spec", "test:ts"}
    assert by_step["test:spec"].selector == "sub fails on purpose"
    steps = load("node-composite-tests").steps
    assert [s.plan.script for s in steps] == ["build", "test:unit", "test:spec", "test:ts"]
    assert [s.plan.after for s in steps] == ["", "&&", ";", ";"]
    assert all(s.ran for s in steps)
    rerun = load("node-composite-rerun").steps
    assert [s.plan.script for s in rerun] == ["test:unit", "test:spec", "test:ts"]
    assert "--grep=^(?:sub fails on purpose)$" in rerun[1].plan.argv[-1]


# ---- The rerun shapes of issue 35, recorded on projects of bench/verify_corpus ------------

#: (passed, failed, skipped) of the first run and of run_failing_tests: the rerun passes
#: nothing, because nothing that passed runs again (vitest counts the tests of the failing
#: file that the name pattern left out as skipped: they did not run).
CORPUS_RERUNS: dict[str, tuple[tuple[int, int, int], tuple[int, int, int]]] = {
    "go-humanize": ((40, 3, 0), (0, 3, 0)),
    "rust-cfg-if": ((7, 3, 0), (0, 3, 0)),
    "node-ms": ((6, 3, 0), (0, 3, 4)),
    "node-escape-html": ((4, 2, 0), (0, 2, 3)),
    "node-bytes": ((5, 2, 0), (0, 2, 0)),
}


@pytest.mark.parametrize("project", sorted(CORPUS_RERUNS))
def test_corpus_reruns_run_exactly_the_failures(project: str) -> None:
    first = replay_tests(f"corpus-{project}-tests")
    again = replay_tests(f"corpus-{project}-rerun")
    counts = [(r.passed, r.failed, r.skipped) for r in (first, again)]
    assert tuple(counts) == CORPUS_RERUNS[project]
    assert [f.name for f in again.failures] == [f.name for f in first.failures]


def test_vitest_gets_no_second_run_flag() -> None:
    # `vitest --coverage --run` plus sandlot's `--run` made vitest exit with "Expected a
    # single value for option --run" (vitest 1.6 and 3.2); the script says it, sandlot doesn't.
    for case in ("corpus-node-ms-tests", "corpus-node-ms-rerun",
                 "corpus-node-escape-html-tests", "corpus-node-escape-html-rerun"):
        run = load(case)
        assert "--run" not in run.plan.argv, case
        assert "Expected a single value" not in run.stderr
    assert vitest_runs_once("vitest --coverage --run")
    assert vitest_runs_once("cross-env CI=1 node_modules/.bin/vitest run --coverage")
    assert not vitest_runs_once("vitest --coverage")
    assert not vitest_runs_once("vitest watch")


def test_vitest_1_empty_file_title_is_dropped() -> None:
    run = load("corpus-node-escape-html-tests")
    assert run.report is not None
    titles = [t["ancestorTitles"] for s in json.loads(run.report)["testResults"]
              for t in s["assertionResults"]]
    assert all(t[0] == "" for t in titles)  # vitest 1.x's shape, as recorded
    report = replay_tests("corpus-node-escape-html-tests")
    assert [f.name for f in report.failures] == [
        "escapeHtml > quotes (planted) > escapes single quotes",
        "leaves plain text alone (planted)",
    ]


def test_rust_doctests_rerun_apart_from_other_targets() -> None:
    # cargo refuses `--doc` beside `--lib` / `--test` ("can't mix --doc with other target
    # selecting options"): the doctest runs in a cargo invocation of its own.
    run = load("corpus-rust-cfg-if-rerun")
    argvs = [step.plan.argv for step in run.steps]
    assert [a[4:a.index("--")] for a in argvs] == [["--lib", "--test", "planted"], ["--doc"]]
    assert "can't mix --doc" not in run.stderr
    assert doctest_filter(["src/lib.rs - f (line 188)", "src/a.rs - (line 1188)"]) == [
        "188)", "1188)",
        *(a for d in "23456789" for a in ("--skip", f"{d}188)")),
        *(a for d in "123456789" for a in ("--skip", f"{d}1188)")),
    ]
    assert doctest_filter(["src/lib.rs - odd name"]) == []  # no line: every doctest runs


def test_a_failed_mocha_hook_reruns_its_suite_from_its_file() -> None:
    # The hook's file and its suite (not the whole suite: 52 passed, 5 failed before).
    (step,) = load("corpus-node-bytes-rerun").steps
    command = step.plan.argv[2]
    assert r"bytes with a fixture \(planted\) .*)$'" in command
    assert " test/bytes.spec.js test/hooked.spec.js " in command


def test_go_subtests_are_selected_level_by_level() -> None:
    run = load("corpus-go-humanize-rerun")
    assert run.plan.argv[4] == (
        r"-run=^TestPlantedComma$/^a_million_\(planted\)$/^$|"
        r"^TestPlantedOrdinal$/^11th\+_\(planted\)$/^$|^TestPlantedWhole$/^$"
    )
    assert run_pattern(["TestA/b/c"]) == "^TestA$/^b$/^c$/^$"


@pytest.mark.parametrize("case", sorted(expected.COVERAGE))
def test_coverage_reports(case: str) -> None:
    report = replay_tests(f"{case}-coverage")
    expected.assert_coverage(case, report)
    # Measuring coverage changes nothing about the test results (rust-uncovered adds a binary
    # without tests).
    expected.assert_tests(case.removesuffix("+rust-uncovered"), report)


def test_coverage_without_a_report() -> None:
    # Tests that did not all run may leave no report: a note says so. A clean run that wrote
    # none is the tool failing.
    run = load("go-coverage").model_copy(update={"coverage": None})
    report = build_test_report(DETECTORS["go"], run)
    assert report.coverage is None
    assert report.notes == ["coverage: no report was written (exit 1): the tests did not all "
                            "run; fix the failures above and run again"]
    with pytest.raises(VerifyToolFailedError, match="wrote no coverage report"):
        build_test_report(DETECTORS["go"], run.model_copy(update={"exit_code": 0}))


def test_rust_coverage_that_does_not_build() -> None:
    # tarpaulin prints rustc's text, not cargo's JSON: the build failure is read from it.
    report = replay_tests("rust+rust-broken-coverage")
    expected.assert_tests("rust+rust-broken", report)
    assert report.coverage is None and report.notes[0].startswith("coverage: no report")
    assert [f.message for f in report.failures] == ["E0308: mismatched types"]


def test_composite_coverage_is_the_last_steps_report() -> None:
    # Every step ran under c8 with one raw directory: the last report written holds them all.
    run = load("node-composite-coverage")
    assert all(step.plan.argv[0] == "c8" for step in run.steps)
    assert [step.plan.argv[4] for step in run.steps] == [
        "--clean=true", "--clean=false", "--clean=false", "--clean=false"]
    report = replay_tests("node-composite-coverage")
    expected.assert_tests("node-composite", report)
    assert report.coverage is not None and report.coverage.tool == "c8"
    last = DETECTORS["node"].parse_coverage(run.steps[-1])
    assert report.coverage == last
    assert [f.file for f in report.coverage.files] == ["src/math.js"]
