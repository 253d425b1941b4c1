"""The coder JSON models and the CLI error mapping, on output of the coder CLI itself.

Sources, each used when present: coder's own golden `list -o json` output (shared/reference),
the outputs recorded from a real `coder` by scripts/record-coder-cli.py
(tests/fixtures/coder-cli/, or the directory in $SANDLOT_CODER_FIXTURES), and the live output
of the deployment under test.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sandlot.backends.coder.cli import CLIResult, CoderCLI, last_error_line
from sandlot.backends.coder.models import (
    ParseError,
    parse_whoami,
    parse_whoami_text,
    parse_workspaces,
)
from sandlot.errors import (
    CoderCLIError,
    CoderNotLoggedInError,
    CoderUnreachableError,
    CoderWorkspaceNotFoundError,
)

from .deployment import MULTI, SINGLE, Deployment

REPO = Path(__file__).resolve().parents[2]
RECORDED = Path(os.environ.get("SANDLOT_CODER_FIXTURES", REPO / "tests" / "fixtures" / "coder-cli"))


GOLDEN = REPO / "tests" / "fixtures" / "coder-golden" / "list-output-json.golden.json"


def _recorded(prefix: str) -> list[dict[str, Any]]:
    if not RECORDED.is_dir():
        return []
    cases = [json.loads(p.read_text()) for p in sorted(RECORDED.glob(f"{prefix}*.json"))]
    return [c for c in cases if isinstance(c, dict) and "argv" in c]


def test_coders_own_golden_list_output() -> None:
    workspaces = parse_workspaces(GOLDEN.read_text())
    assert [w.name for w in workspaces] == ["test-workspace"]
    ws = workspaces[0]
    assert ws.owner_name == "testuser" and ws.reference == "testuser/test-workspace"
    assert ws.latest_build.transition == "start" and ws.latest_build.status == "running"
    assert ws.latest_build.job.status == "succeeded"
    assert ws.agents == []  # no resources in that golden case
    assert not ws.build_in_progress and not ws.build_failed


def test_empty_list_output_means_no_workspaces() -> None:
    assert parse_workspaces("") == []
    assert parse_workspaces("\n") == []
    assert parse_workspaces("[]\n") == []


def test_unexpected_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="not JSON"):
        parse_workspaces("No workspaces found! Create one:")
    with pytest.raises(ParseError, match="unexpected JSON shape"):
        parse_workspaces('[{"name": "x"}]')
    with pytest.raises(ParseError, match="empty user list"):
        parse_whoami("[]")


# Failing `list` calls (logged out, bad URL) are in test_recorded_failures_map_to_typed_errors.
@pytest.mark.parametrize(
    "case", [c for c in _recorded("list-") if c["exit_code"] == 0], ids=lambda c: c["name"]
)
def test_recorded_list_outputs(case: dict[str, Any]) -> None:
    workspaces = parse_workspaces(case["stdout"])
    expected = case.get("stdout_json") or []
    assert [w.name for w in workspaces] == [w["name"] for w in expected]
    for ws, raw in zip(workspaces, expected, strict=True):
        agents = [a for r in raw["latest_build"].get("resources") or [] for a in
                  r.get("agents") or []]
        assert [(a.name, a.status, a.lifecycle_state) for a in ws.agents] == [
            (a["name"], a["status"], a["lifecycle_state"]) for a in agents
        ]


@pytest.mark.parametrize("case", _recorded("whoami-json"), ids=lambda c: c["name"])
def test_recorded_whoami(case: dict[str, Any]) -> None:
    if case["exit_code"] != 0:  # a release without `whoami -o` (sandlot then reads the text)
        assert "unknown shorthand flag: 'o'" in case["stderr"]
        return
    me = parse_whoami(case["stdout"])
    assert me.username == case["stdout_json"][0]["username"]


# What each recorded failure must map to (case name prefix -> error class).
_EXPECTED_ERRORS: dict[str, type[Exception]] = {
    "whoami-logged-out": CoderNotLoggedInError,
    "list-logged-out": CoderNotLoggedInError,
    "whoami-bad-token": CoderNotLoggedInError,
    "whoami-bad-url": CoderUnreachableError,
    "list-bad-url": CoderUnreachableError,
    "start-unknown-workspace": CoderWorkspaceNotFoundError,
    "stop-unknown-workspace": CoderWorkspaceNotFoundError,
    "delete-unknown-workspace": CoderWorkspaceNotFoundError,
    "start-owner-slash-name": CoderWorkspaceNotFoundError,
    "create-existing": CoderCLIError,
    "create-unknown-template": CoderCLIError,
}


@pytest.mark.parametrize(
    "case",
    [c for c in _recorded("") if c["name"] in _EXPECTED_ERRORS],
    ids=lambda c: c["name"],
)
def test_recorded_failures_map_to_typed_errors(case: dict[str, Any]) -> None:
    cli = CoderCLI("coder")
    result = CLIResult(case["argv"], case["exit_code"], case["stdout"], case["stderr"])
    expected = _EXPECTED_ERRORS[case["name"]]
    if "unknown shorthand flag" in case["stderr"]:  # `whoami -o` on a release without it
        expected = CoderCLIError
    with pytest.raises(expected):
        cli.raise_for(result, " ".join(case["argv"]))


def test_last_error_line() -> None:
    text = (
        'Encountered an error running "coder start", see "coder start --help" for more\n'
        "error: Resource not found or you do not have access to this resource\n"
    )
    assert last_error_line(text) == (
        "Resource not found or you do not have access to this resource"
    )
    assert last_error_line("") == ""
    assert last_error_line("just one line\n") == "just one line"


def test_live_list_output_of_the_deployment(deployment: Deployment) -> None:
    """Parse what the deployment's CLI prints for a running one-agent and two-agent workspace."""
    names = ["models-one", "models-two"]
    try:
        deployment.create_workspace(names[0], deployment.template(SINGLE))
        deployment.create_workspace(names[1], deployment.template(MULTI))
        out = deployment.cli("list", "-o", "json").stdout
        by_name = {w.name: w for w in parse_workspaces(out)}
        one, two = by_name[names[0]], by_name[names[1]]
        assert one.reference == f"{deployment.username}/{names[0]}"
        assert [a.name for a in one.agents] == ["main"]
        assert {a.name for a in two.agents} == {"main", "aux"}
        for agent in [*one.agents, *two.agents]:
            assert agent.status == "connected" and agent.lifecycle_state == "ready"
            assert agent.id and agent.operating_system == "linux"
        as_json = deployment.cli("whoami", "-o", "json", check=False)
        if as_json.returncode == 0:
            assert parse_whoami(as_json.stdout).username == deployment.username
        else:  # a release without `whoami -o` (v2.26): its text form
            assert "unknown shorthand flag: 'o'" in as_json.stderr
        text = deployment.cli("whoami").stdout
        assert parse_whoami_text(text).username == deployment.username
    finally:
        for name in names:
            deployment.delete_quietly(name)
