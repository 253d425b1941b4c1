"""create / list / start / stop / delete of the fake `coder`, their JSON and their messages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sandlot.testing import AgentSpec, ParameterSpec

from .support import Coder, pid_gone

HEAD = 'Encountered an error running "coder {0}", see "coder {0} --help" for more information'

# Key order of codersdk.Workspace / WorkspaceBuild / ProvisionerJob in `coder list -o json` of
# v2.27.0 (tests/fixtures/coder-cli/list-running.json); autostart_schedule and ttl_ms are
# omitempty.
WORKSPACE_KEYS = [
    "id",
    "created_at",
    "updated_at",
    "owner_id",
    "owner_name",
    "owner_avatar_url",
    "organization_id",
    "organization_name",
    "template_id",
    "template_name",
    "template_display_name",
    "template_icon",
    "template_allow_user_cancel_workspace_jobs",
    "template_active_version_id",
    "template_require_active_version",
    "template_use_classic_parameter_flow",
    "latest_build",
    "latest_app_status",
    "outdated",
    "name",
    "last_used_at",
    "deleting_at",
    "dormant_at",
    "health",
    "automatic_updates",
    "allow_renames",
    "favorite",
    "next_start_at",
    "is_prebuild",
    "task_id",  # v2.30.0
]
BUILD_KEYS = [
    "id",
    "created_at",
    "updated_at",
    "workspace_id",
    "workspace_name",
    "workspace_owner_id",
    "workspace_owner_name",
    "template_version_id",
    "template_version_name",
    "build_number",
    "transition",
    "initiator_id",
    "initiator_name",
    "job",
    "reason",
    "resources",
    "deadline",
    "max_deadline",
    "status",
    "daily_cost",
    "matched_provisioners",
    "template_version_preset_id",
    "has_ai_task",
    "has_external_agent",
]
JOB_KEYS = [
    "id",
    "created_at",
    "started_at",
    "completed_at",
    "status",
    "worker_id",
    "file_id",
    "tags",
    "queue_position",
    "queue_size",
    "organization_id",
    "initiator_id",  # v2.30.0
    "input",
    "type",
    "metadata",
    "logs_overflowed",
]
# `metadata` is omitempty, and the fake's resources have none.
RESOURCE_KEYS = [
    "id",
    "created_at",
    "job_id",
    "workspace_transition",
    "type",
    "name",
    "hide",
    "icon",
    "agents",
    "daily_cost",
]
# codersdk.WorkspaceAgent field order (codersdk/workspaceagents.go), connected and ready
# (tests/fixtures/coder-cli/list-running.json).
AGENT_KEYS = [
    "id",
    "parent_id",
    "created_at",
    "updated_at",
    "first_connected_at",
    "last_connected_at",
    "started_at",
    "ready_at",
    "status",
    "lifecycle_state",
    "name",
    "resource_id",
    "architecture",
    "environment_variables",
    "operating_system",
    "logs_length",
    "logs_overflowed",
    "directory",
    "expanded_directory",
    "version",
    "api_version",
    "apps",
    "latency",
    "connection_timeout_seconds",
    "troubleshooting_url",
    "subsystems",
    "health",
    "display_apps",
    "log_sources",
    "scripts",
    "startup_script_behavior",
]
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?Z$")


def test_list_without_workspaces_prints_an_empty_array(coder: Coder) -> None:
    result = coder.ok("list", "-o", "json")
    assert (result.stdout, result.stderr) == ("[]\n", "")
    coder.deployment.set_empty_list_json(False)  # older releases
    result = coder.ok("list", "-o", "json")
    assert result.stdout == ""
    assert result.stderr.startswith("No workspaces found! Create one:")


def test_create_then_list_shape(coder: Coder) -> None:
    result = coder.create("ws1")
    assert re.search(
        r"\nThe ws1 workspace has been created at \w{3} [ \d]\d \d\d:\d\d:\d\d!\n$", result.stdout
    )
    assert "==> ⧗ Starting workspace" in result.stdout
    agents = coder.wait_ready("ws1")
    (ws,) = coder.list_json()
    assert list(ws) == WORKSPACE_KEYS
    build = ws["latest_build"]
    assert list(build) == BUILD_KEYS
    assert list(build["job"]) == JOB_KEYS
    assert build["transition"] == "start" and build["status"] == "running"
    assert build["job"]["status"] == "succeeded"
    assert build["build_number"] == 1
    volume, container = build["resources"]
    assert "agents" not in volume
    assert list(container) == RESOURCE_KEYS
    (agent,) = agents
    assert list(agent) == AGENT_KEYS
    assert agent["name"] == "main"
    assert agent["directory"] == "project"
    home = coder.deployment.agent_home("ws1")
    assert agent["expanded_directory"] == str(home / "project")
    assert Path(agent["expanded_directory"]).is_dir()
    assert agent["health"] == {"healthy": True}
    assert ws["health"] == {"healthy": True, "failing_agents": []}
    for stamp in (ws["created_at"], build["job"]["completed_at"], agent["first_connected_at"]):
        assert TIMESTAMP.match(stamp), stamp
    assert ws["owner_name"] == coder.deployment.username
    assert ws["template_name"] == "docker"


def test_list_filters(coder: Coder) -> None:
    coder.create("alpha")
    coder.create("beta")
    names = [ws["name"] for ws in coder.list_json("--search", "name:alp")]
    assert names == ["alpha"]
    assert sorted(ws["name"] for ws in coder.list_json("-a")) == ["alpha", "beta"]
    result = coder.run("list", "-o", "json", "--search", "flavour:x")
    assert result.code == 1
    assert result.stderr == (
        HEAD.format("list") + "\nerror: Trace=[query workspaces: ]\n"
        "Invalid workspace search query.\n1 validation error(s) found\n"
        '\t flavour : Query param "flavour" is not a valid query param\n'
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create", "ws", "-t", "nope", "--yes"], 'no template found with the name "nope"'),
        (
            ["create", "Bad_Name", "-t", "docker", "--yes"],
            'workspace name "Bad_Name" is invalid: must be alphanumeric with hyphens',
        ),
        (
            ["create", "a" * 33, "-t", "docker", "--yes"],
            f'workspace name "{"a" * 33}" is invalid: must be <= 32 characters',
        ),
        (
            ["create", "ws", "-t", "docker", "--template-version", "v9", "--yes"],
            'Trace=[get template version by name: ]\nNo template version found by name "v9".',
        ),
        (
            ["create", "ws", "-t", "docker", "-O", "acme", "--yes"],
            'organization "acme" not found, are you sure you are a member of this organization? '
            "Valid options for '--org=' are [coder].",
        ),
        (
            ["create", "ws", "-t", "docker", "--parameter", "zone=1", "--yes"],
            'prepare build: parameter "zone" is not present in the template.',
        ),
        (["create", "a/b/c", "-t", "docker", "--yes"], 'invalid workspace name: "a/b/c"'),
    ],
)
def test_create_errors(coder: Coder, args: list[str], message: str) -> None:
    result = coder.run(*args)
    assert result.code == 1
    assert result.stderr == HEAD.format("create") + f"\nerror: {message}\n"
    assert coder.list_json("-a") == []


def test_an_unknown_flag_is_reported_bare_with_the_argv(coder: Coder) -> None:
    result = coder.run("create", "ws", "-t", "docker", "--bogus")
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr == (
        'parsing flags ([create ws -t docker --bogus]) for "coder create": unknown flag: --bogus\n'
    )
    assert coder.list_json("-a") == []


def test_create_existing_name(coder: Coder) -> None:
    coder.create("dup")
    result = coder.run("create", "dup", "-t", "docker", "--yes")
    assert result.code == 1
    assert result.stderr.endswith('error: a workspace already exists named "dup"\n')


def test_parameters_are_prompted_for_like_the_real_cli(coder: Coder, tmp_path: Path) -> None:
    coder.deployment.add_template(
        "params",
        parameters=[
            ParameterSpec("region", default="eu-west", description="Where"),
            ParameterSpec("size", required=True),
        ],
        presets={"big": {"size": "xl"}},
    )
    # a template with presets needs --preset (a name or `none`) without a terminal
    result = coder.run("create", "p1", "-t", "params", "--yes")
    assert result.code == 1
    assert result.stdout.startswith("Select a preset below:\n")
    assert result.stderr.endswith(
        "error: unable to prompt user for preset: failed to select "
        "preset: error creating cancelreader: add reader to epoll "
        "interest list\n"
    )
    # --yes does not fill parameters: without values the prompt reads EOF
    none = ("--preset", "none")
    result = coder.run("create", "p1", "-t", "params", "--yes", *none)
    assert result.code == 1
    assert result.stdout == (
        'No preset applied.\nregion\n  Where\n\n> Enter a value (default: "eu-west"): '
    )
    assert result.stderr.endswith("error: prepare build: EOF\n")
    # v2.27.0 has no newline after the preset line, and no --use-parameter-defaults
    coder.deployment.set_release("v2.27.0")
    result = coder.run("create", "p1", "-t", "params", "--yes", *none)
    assert result.stdout.startswith("No preset applied.region\n")
    result = coder.run("create", "p1", "-t", "params", "--yes", *none, "--use-parameter-defaults")
    assert (result.code, result.stdout) == (1, "")
    assert result.stderr.endswith('"coder create": unknown flag: --use-parameter-defaults\n')
    coder.deployment.set_release("v2.30.0")  # the newest, which has it
    # defaults fill `region`, but `size` has none
    result = coder.run("create", "p1", "-t", "params", "--yes", *none, "--use-parameter-defaults")
    assert result.stderr.endswith("error: prepare build: EOF\n")
    assert "Using default value for region: 'eu-west'" in result.stdout
    coder.ok(
        "create", "p1", "-t", "params", "--yes", *none, "--use-parameter-defaults",
        "--parameter", "size=m",
    )  # fmt: skip
    result = coder.ok(
        "create", "p2", "-t", "params", "--yes", "--preset", "big", "--parameter", "region=us"
    )
    assert result.stdout.startswith("Preset 'big' applied:\n  size: 'xl'\n")
    values_file = tmp_path / "values.yaml"
    values_file.write_text('region: "ap-south"\nsize: s\n')
    coder.ok(
        "create", "p3", "-t", "params", "--yes", *none, "--rich-parameter-file", str(values_file)
    )
    # an answer on stdin is taken as the prompt's value
    coder.ok(
        "create", "p4", "-t", "params", "--yes", *none, "--use-parameter-defaults", input="l\n"
    )
    by_name = {ws["name"]: ws for ws in coder.list_json()}
    assert set(by_name) == {"p1", "p2", "p3", "p4"}
    assert by_name["p2"]["latest_build"]["template_version_preset_id"] is not None


def test_stop_start_delete(coder: Coder) -> None:
    coder.create("life")
    coder.wait_ready("life")
    pid = coder.deployment.agent_pids()[0]
    home = coder.deployment.agent_home("life")
    (home / "kept.txt").write_text("persistent home volume")

    result = coder.ok("start", "life", "--yes")
    assert result.stdout == "\nThe life workspace is already running!\n"

    result = coder.ok("stop", coder.deployment.username + "/life", "--yes")
    assert re.search(r"\nThe life workspace has been stopped at .+!\n$", result.stdout)
    assert pid_gone(pid)
    (ws,) = coder.list_json()
    assert ws["latest_build"]["transition"] == "stop"
    assert ws["latest_build"]["status"] == "stopped"
    assert all("agents" not in r for r in ws["latest_build"]["resources"])

    result = coder.ok("start", "life", "--yes")
    assert re.search(r"\nThe life workspace has been started at .+!\n$", result.stdout)
    coder.wait_ready("life")
    assert (
        coder.deployment.agent_home("life") / "kept.txt"
    ).read_text() == "persistent home volume"
    assert coder.list_json()[0]["latest_build"]["build_number"] == 3

    new_pid = coder.deployment.agent_pids()[0]
    result = coder.ok("delete", "life", "--yes")
    owner = coder.deployment.username
    assert re.search(rf"\n{owner}/life has been deleted at .+!\n$", result.stdout)
    assert f"{owner}/life was last used 0 days ago" in result.stderr
    assert pid_gone(new_pid)
    assert coder.list_json("-a") == []
    assert not home.exists()


def test_lifecycle_commands_refuse_unknown_and_id_refs(coder: Coder) -> None:
    coder.create("ref")
    ws_id = coder.list_json()[0]["id"]
    for verb in ("start", "stop", "delete"):
        result = coder.run(verb, "missing", "--yes")
        assert result.code == 1
        assert result.stderr == (
            HEAD.format(verb) + "\nerror: Resource not found or you do not have access to "
            "this resource\n"
        )
    assert coder.run("stop", ws_id, "--yes").code == 1
    coder.deployment.set_accept_workspace_ids(True)
    coder.ok("stop", ws_id, "--yes")


def test_stop_without_yes_reads_the_confirmation(coder: Coder) -> None:
    coder.create("confirm")
    result = coder.run("stop", "confirm")
    assert result.code == 1
    assert result.stdout == "> Confirm stop workspace? (yes/no) "
    assert result.stderr.endswith("error: EOF\n")
    result = coder.run("stop", "confirm", input="no\n")
    assert (result.code, result.stderr) == (1, "")  # a cancelled prompt exits quietly
    coder.ok("stop", "confirm", input="yes\n")


def test_multiple_agents_have_their_own_homes(coder: Coder) -> None:
    coder.deployment.add_template("duo", agents=[AgentSpec("dev"), AgentSpec("db")])
    coder.create("pair", template="duo")
    agents = coder.wait_ready("pair")
    assert sorted(a["name"] for a in agents) == ["db", "dev"]
    assert all("directory" not in a for a in agents)  # omitempty when the template sets none
    assert coder.deployment.agent_home("pair", "dev") != coder.deployment.agent_home("pair", "db")
    assert len(coder.deployment.agent_pids()) == 2


def test_concurrent_creates_keep_the_state_consistent(coder: Coder) -> None:
    from concurrent.futures import ThreadPoolExecutor

    names = [f"par-{i}" for i in range(4)]
    with ThreadPoolExecutor(len(names)) as pool:
        results = list(pool.map(lambda n: coder.run("create", n, "-t", "docker", "--yes"), names))
    assert [r.code for r in results] == [0] * len(names)
    assert sorted(ws["name"] for ws in coder.list_json()) == names


def test_workspaces_of_other_owners(coder: Coder) -> None:
    coder.deployment.add_user("alice")
    coder.create("alice/hers")
    coder.create("mine")
    assert [ws["name"] for ws in coder.list_json()] == ["mine"]  # --search owner:me
    (hers,) = coder.list_json("--search", "owner:alice")
    assert (hers["owner_name"], hers["name"]) == ("alice", "hers")
    assert sorted(ws["name"] for ws in coder.list_json("-a")) == ["hers", "mine"]
    assert coder.run("stop", "hers", "--yes").code == 1  # a bare name means "mine"
    coder.ok("stop", "alice/hers", "--yes")
