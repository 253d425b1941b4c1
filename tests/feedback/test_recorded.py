"""Post-edit feedback judged on output recorded from the real tools
(scripts/record-feedback-fixtures.py): each case's raw check runs, read back through the
detectors' parsers, must give exactly the case's findings, formatting and check statuses."""

from __future__ import annotations

import json

import pytest

from sandlot.feedback.checks import assemble
from sandlot.verify.detector import detector_for_file
from sandlot.verify.filecheck import CheckRun, FileFeedback
from tests.feedback.cases import BY_NAME, CASES, RECORDED, assert_feedback


def replay(name: str, said: set[str] | None = None) -> FileFeedback:
    data = json.loads((RECORDED / f"{name}.json").read_text())
    case = BY_NAME[data["case"]]
    runs = [CheckRun.model_validate(run) for run in data["runs"]]
    detector = detector_for_file(case.file)
    assert detector is not None
    return assemble(detector, case.file, runs, budget=case.budget, duration=0.0, said=said)


@pytest.mark.parametrize("name", [case.name for case in CASES])
def test_recorded_feedback(name: str) -> None:
    assert_feedback(BY_NAME[name], replay(name))


def test_every_case_is_recorded() -> None:
    assert sorted(p.stem for p in RECORDED.glob("*.json")) == sorted(BY_NAME)


def test_a_missing_tool_is_said_once_per_set() -> None:
    said: set[str] = set()
    first = replay("python-missing", said)
    assert len(first.notes) == 1
    assert first.notes[0].startswith("ruff is not installed in the sandbox")
    assert said == {"python:ruff"}
    again = replay("python-missing", said)
    assert again.notes == []
    assert [c.status for c in again.checks] == ["missing", "missing"]


def test_over_budget_is_a_note_not_a_failure() -> None:
    feedback = replay("python-slow")
    assert feedback.over_budget and feedback.ok
    assert all("did not finish within the 2 s feedback budget" in n for n in feedback.notes)
    assert len(feedback.notes) == 2


def test_a_syntax_error_reported_by_two_tools_is_one_finding() -> None:
    for name in ("go-syntax", "python-syntax"):
        feedback = replay(name)
        assert len(feedback.findings) == 1, feedback.findings


def test_unformatted_go_gives_no_finding_only_the_verdict() -> None:
    feedback = replay("go-unformatted")
    assert (feedback.formatted, feedback.findings, feedback.ok) == (False, [], False)


def test_a_linter_that_crashes_is_a_failed_check_with_its_words() -> None:
    # The recorded ruff check run, as if ruff had exited 2 (its "configuration error" code)
    # with nothing on stdout: the check failed, it did not find the file clean.
    data = json.loads((RECORDED / "python-clean.json").read_text())
    run = CheckRun.model_validate(data["runs"][1])
    broken = run.model_copy(update={"exit_code": 2, "stdout": "",
                                    "stderr": "ruff failed\n  Cause: bad config"})
    detector = detector_for_file("x.py")
    assert detector is not None
    outcome = detector.read_file_check(broken)
    assert outcome.failure == "ruff check exited 2, failed: ruff failed Cause: bad config"
    feedback = assemble(detector, "x.py", [broken], budget=3, duration=0)
    assert [c.status for c in feedback.checks] == ["failed"]
    assert feedback.notes == [f"ruff check could not check x.py: {outcome.failure}"]
