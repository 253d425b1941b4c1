"""The fake `coder` command: whoami, list, create, start, stop, delete, ssh, version.

Each handler follows the matching file of coder's cli/ package (named in its docstring) for the
order of checks, the text printed and the errors returned; errors are rendered by errors.py the
way cli/root.go does. Only the standard library is imported here (the launcher measures every
millisecond); `ssh --stdio` pipes bytes to the agent's unix socket without parsing SSH.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from pathlib import Path

from . import args, builds, faults, model, params, prompts, shapes, state
from .args import ARRAY, BOOL, Option
from .errors import CLIError, ExitCode, api_error, not_found
from .session import Client, Invocation, binary_path, init_client, query_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

NAME_RE = re.compile(r"^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$")  # codersdk/name.go UsernameValidRegex
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


class Command:
    """A subcommand: its options, handler, usage line and aliases."""

    def __init__(
        self,
        name: str,
        options: tuple[Option, ...],
        handler: Callable[[Invocation], int],
        usage: str,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.options = options
        self.handler = handler
        self.usage = usage
        self.aliases = aliases


def _stamp() -> str:
    """cliui.Timestamp: Go's time.Stamp layout, "Jan _2 15:04:05", local time."""
    return time.strftime("%b %e %H:%M:%S")


# --- workspace resolution ---------------------------------------------------------------------


def split_named(identifier: str) -> tuple[str, str]:
    """cli/root.go splitNamedWorkspace: `name` (owner me) or `owner/name`."""
    parts = identifier.split("/")
    if len(parts) == 1:
        return "me", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise CLIError(f'invalid workspace name: "{identifier}"')


def workspace_path(identifier: str) -> str:
    """The API path namedWorkspace requests (WorkspaceByOwnerAndName)."""
    owner, _, name = identifier.rpartition("/")
    return f"/api/v2/users/{owner or 'me'}/workspace/{name}"


def resolve_workspace(client: Client, identifier: str) -> dict[str, Any]:
    """namedWorkspace; also a workspace id when the accept_workspace_ids setting is on."""
    st = client.st
    if st["settings"].get("accept_workspace_ids") and UUID_RE.match(identifier):
        by_id: dict[str, Any] | None = st["workspaces"].get(identifier.lower())
        if by_id is not None and not by_id.get("deleted"):
            return by_id
    owner_ref, name = split_named(identifier)
    owner = state.user_by_ref(st, owner_ref, client.user)
    ws = state.find_workspace(st, owner["id"], name) if owner else None
    if ws is None:
        raise not_found()
    return ws


def _owner_of(st: state.State, ws: dict[str, Any]) -> dict[str, Any]:
    return next(u for u in st["users"] if u["id"] == ws["owner_id"])


def _finish_pending(inv: Invocation) -> None:
    """Let the fake server finish builds that completed since the last call."""
    try:
        st = state.load(inv.root)
    except state.StateMissingError:
        return
    if builds.due(st):
        with state.locked(inv.root) as locked_state:
            builds.finalize_due(inv.root, locked_state)


def _run_build(inv: Invocation, workspace_id: str, out: Any, prefix: str = "") -> dict[str, Any]:
    """Print a build's log, wait for it, and fail like cliui.WorkspaceBuild when it fails."""
    st = state.load(inv.root)
    ws = st["workspaces"][workspace_id]
    template = next(t for t in st["templates"].values() if t["id"] == ws["template_id"])
    builds.stream_log(out, ws["build"], [a["name"] for a in template["agents"]])
    ws = builds.wait_until_complete(inv.root, workspace_id)
    if ws["build"].get("error"):
        error = CLIError(ws["build"]["error"])
        raise error.wrap(prefix) if prefix else error
    return ws


# --- whoami -----------------------------------------------------------------------------------


def cmd_whoami(inv: Invocation) -> int:
    """cli/whoami.go: `-o json` prints a one-element array, without a trailing newline."""
    args.require_args(inv.parsed, 0)
    client = init_client(inv, "/api/v2/users/me")
    row = shapes.whoami_row(client.st, client.user, client.url)
    fmt = inv.parsed.text("output") or "text"
    if fmt == "json":
        inv.stdout.write(shapes.dumps([row]))
    elif fmt == "table":
        inv.stdout.write("URL                     USERNAME  ID\n")
        inv.stdout.write(f"{row['url']}  {row['username']}  {row['user_id']}\n")
    elif fmt == "text":
        # v2.27.0 renders the text form as a one-element list, no trailing newline
        # (tests/fixtures/coder-cli/whoami-text.json).
        inv.stdout.write(
            f"[  Coder is running at {row['url']}, You're authenticated as {row['username']} !\n]"
        )
    else:
        raise CLIError(f'unknown output format "{fmt}"')
    return 0


# --- list -------------------------------------------------------------------------------------

# coderd/searchquery/search.go Workspaces: the keys the server understands.
_SEARCH_KEYS = frozenset(
    {
        "owner",
        "template",
        "name",
        "status",
        "has-agent",
        "dormant",
        "last_used_after",
        "last_used_before",
        "outdated",
        "organization",
        "id",
        "has-ai-task",
        "has_external_agent",
        "param",
        "shared",
        "healthy",
    }
)


def _search_terms(query: str) -> list[tuple[str, str]]:
    terms: list[tuple[str, str]] = []
    for element in re.findall(r'(?:[^\s"]|"[^"]*")+', query.lower()):
        element = element.replace('"', "")
        key, sep, value = element.partition(":")
        if sep:
            terms.append((key, value))
        elif "/" in element:
            owner, _, name = element.partition("/")
            terms.extend([("owner", owner), ("name", name)])
        else:
            terms.append(("name", element))
    return terms


def _matches(client: Client, ws: dict[str, Any], terms: list[tuple[str, str]], at: float) -> bool:
    st = client.st
    owner = _owner_of(st, ws)
    template = next(t for t in st["templates"].values() if t["id"] == ws["template_id"])
    for key, value in terms:
        if key == "owner":
            expected = client.user["username"].lower() if value == "me" else value
            if owner["username"].lower() != expected and owner["id"] != value:
                return False
            continue
        checks: dict[str, Callable[[str], bool]] = {
            "name": lambda v: v in ws["name"].lower(),
            "template": lambda v: template["name"].lower() == v,
            "status": lambda v: model.workspace_status(ws["build"], at) == v,
            "id": lambda v: ws["id"] in v.split(","),
        }
        check = checks.get(key)
        if check is not None and not check(value):
            return False
    return True


def cmd_list(inv: Invocation) -> int:
    """cli/list.go + cli/cliui/workspacefilter.go.

    ``--all`` drops the filter, else ``--search`` (default ``owner:me``) is sent as ``q``.
    With no workspace, `-o json` prints ``[]`` (tests/fixtures/coder-cli/list-empty.json);
    with the `empty_list_json` setting off (older releases) stdout stays empty and stderr says
    ``No workspaces found! Create one:``.
    """
    args.require_args(inv.parsed, 0)
    query = "" if inv.parsed.flag("all") else (inv.parsed.text("search") or "owner:me")
    client = init_client(inv, query_path("/api/v2/workspaces", query), wrap="query workspaces")
    terms = _search_terms(query)
    bad = [key for key, _ in terms if key not in _SEARCH_KEYS]
    if bad:
        error = api_error(
            "Invalid workspace search query.",
            validations=[(key, f'Query param "{key}" is not a valid query param') for key in bad],
        )
        raise error.wrap("query workspaces")
    at = state.now()
    st = client.st
    selected = [ws for ws in state.live_workspaces(st) if _matches(client, ws, terms, at)]
    selected.sort(
        key=lambda ws: (
            model.workspace_status(ws["build"], at) != "running",
            _owner_of(st, ws)["username"].lower(),
            ws["name"].lower(),
        )
    )
    rendered = [shapes.workspace(st, ws, at) for ws in selected]
    _count_list_call(inv.root, [ws["id"] for ws in selected])
    fmt = inv.parsed.text("output") or "table"
    if fmt not in ("json", "table"):
        raise CLIError(f'unknown output format "{fmt}"')
    if not rendered:
        if fmt == "json" and st["settings"].get("empty_list_json"):
            inv.stdout.write("[]\n")
            return 0
        inv.stderr.write("No workspaces found! Create one:\n\n  coder create <name>\n\n")
        return 0
    if fmt == "json":
        inv.stdout.write(shapes.dumps(rendered) + "\n")
    else:
        inv.stdout.write(_table(rendered))
    return 0


def _count_list_call(root: Path, workspace_ids: list[str]) -> None:
    """Consume one unit of `connect_delay_lists` for the agents this call reported."""
    st = state.load(root)
    if not any(
        rec.get("connect_lists_remaining", 0) > 0
        for wid in workspace_ids
        for rec in st["workspaces"][wid].get("agents", [])
    ):
        return
    with state.locked(root) as locked_state:
        for wid in workspace_ids:
            for rec in locked_state["workspaces"][wid].get("agents", []):
                if rec.get("connect_lists_remaining", 0) > 0:
                    rec["connect_lists_remaining"] -= 1
                    if rec["connect_lists_remaining"] == 0:
                        rec["connect_released_at"] = state.now()


def _table(rows: list[dict[str, Any]]) -> str:
    header = [
        "WORKSPACE",
        "TEMPLATE",
        "STATUS",
        "HEALTHY",
        "LAST BUILT",
        "CURRENT VERSION",
        "OUTDATED",
    ]
    lines = [header]
    for ws in rows:
        status = {"running": "Started", "stopped": "Stopped", "failed": "Failed"}.get(
            ws["latest_build"]["status"], ws["latest_build"]["status"].capitalize()
        )
        healthy = str(ws["health"]["healthy"]).lower() if status == "Started" else ""
        lines.append(
            [
                f"{ws['owner_name']}/{ws['name']}",
                ws["template_name"],
                status,
                healthy,
                "0s",
                ws["latest_build"]["template_version_name"],
                str(ws["outdated"]).lower(),
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(line)).rstrip() + "\n"
        for line in lines
    )


# --- create -----------------------------------------------------------------------------------


def _find_template(st: state.State, name: str) -> dict[str, Any] | None:
    for template in st["templates"].values():
        if template["name"].lower() == name.lower():
            found: dict[str, Any] = template
            return found
    return None


def _check_org(inv: Invocation, st: state.State) -> None:
    """cli/root.go OrganizationContext.Selected, for -O/--org."""
    wanted = inv.parsed.text("org")
    org = st["organization"]
    if wanted and wanted not in (org["name"], org["id"]):
        raise CLIError(
            f'organization "{wanted}" not found, are you sure you are a member of this '
            f"organization? Valid options for '--org=' are [{org['name']}]."
        )


def _choose_preset(inv: Invocation, template: dict[str, Any]) -> tuple[dict[str, str], str | None]:
    """cli/create.go preset selection: values to apply and the preset's id.

    With presets, `--preset none` prints "No preset applied." (no newline), a named one prints
    its values, and none given needs a terminal to choose: without one the real CLI fails
    (tests/fixtures/coder-cli/create-params-no-preset.json, -preset-none.json, -preset.json).
    """
    presets: dict[str, Any] = template.get("presets", {})
    preset_name = inv.parsed.text("preset")
    if preset_name.lower() == "none":
        if presets:
            inv.stdout.write("No preset applied.")
        return {}, None
    if not preset_name:
        if presets:
            inv.stdout.write("Select a preset below:\n\x1b[?25l\x1b[?2004h")
            raise CLIError(
                "unable to prompt user for preset: failed to select preset: error creating "
                "cancelreader: add reader to epoll interest list"
            )
        return {}, None
    preset = presets.get(preset_name)
    if preset is None:
        raise CLIError(f'preset "{preset_name}" not found')
    values = dict(preset["parameters"])
    inv.stdout.write(f"Preset '{preset_name}' applied:\n")
    inv.stdout.write("".join(f"  {key}: '{value}'\n" for key, value in values.items()))
    preset_id: str = preset["id"]
    return values, preset_id


def cmd_create(inv: Invocation) -> int:
    """cli/create.go: checks in the real order, then the build log and the final line."""
    template_name = inv.parsed.text("template")
    client = init_client(
        inv,
        query_path("/api/v2/templates", f"exact_name:{template_name}" if template_name else ""),
        wrap="get template by name",
    )
    st = client.st
    owner_ref, name = "me", ""
    if inv.parsed.args:
        owner_ref, name = split_named(inv.parsed.args[0])
    if not name:
        name = prompts.value(inv, "Specify a name for your workspace:")
    if len(name) > 32:
        raise CLIError(f'workspace name "{name}" is invalid: must be <= 32 characters')
    if not NAME_RE.match(name) or name in ("new", "create"):
        reason = (
            f'cannot use "{name}" as a name'
            if name in ("new", "create")
            else "must be alphanumeric with hyphens"
        )
        raise CLIError(f'workspace name "{name}" is invalid: {reason}')
    owner = state.user_by_ref(st, owner_ref, client.user)
    if owner and state.find_workspace(st, owner["id"], name):
        raise CLIError(f'a workspace already exists named "{name}"')
    if not template_name:
        inv.stdout.write("Select a template below to preview the provisioned infrastructure:\n")
        raise CLIError("open /dev/tty: no such device or address")
    template = _find_template(st, template_name)
    if template is None:
        raise CLIError(f'no template found with the name "{template_name}"')
    version_id = template["active_version_id"]
    version_name = inv.parsed.text("template_version")
    if version_name:
        if version_name not in template["versions"]:
            raise api_error(f'No template version found by name "{version_name}".').wrap(
                "get template version by name"
            )
        version_id = template["versions"][version_name]
    _check_org(inv, st)
    preset_values, preset_id = _choose_preset(inv, template)
    try:
        build_params = params.resolve_for_create(inv, template, preset_values)
    except CLIError as exc:
        raise exc.wrap("prepare build") from None
    inv.stdout.write("Planning workspace...\n")
    prompts.confirm(inv, "Confirm create?")
    if owner is None:
        raise not_found().wrap("create workspace")
    with state.locked(inv.root) as locked_state:
        if state.find_workspace(locked_state, owner["id"], name):
            raise api_error(
                f'Workspace "{name}" already exists.',
                validations=[("name", "This value is already in use and should be unique.")],
            ).wrap("create workspace")
        ws = _new_workspace(locked_state, owner, template, name, build_params)
        build = builds.begin(
            locked_state, ws, "start", initiator_id=client.user["id"], version_id=version_id
        )
        build["preset_id"] = preset_id
        failure = faults.take_entry(locked_state, name, "create_fails_after_exists")
        workspace_id = ws["id"]
    if inv.parsed.flag("no_wait"):
        inv.stdout.write(
            f"\nThe {name} workspace has been created in no-wait mode. "
            "Workspace is building in the background.\n"
        )
        return 0
    _run_build(inv, workspace_id, inv.stdout, prefix="watch build")
    if failure:
        raise CLIError(failure["message"].format(url=client.url.rstrip("/"), build_id=build["id"]))
    inv.stdout.write(f"\nThe {name} workspace has been created at {_stamp()}!\n")
    return 0


def _new_workspace(
    st: state.State,
    owner: dict[str, Any],
    template: dict[str, Any],
    name: str,
    build_params: list[dict[str, str]],
) -> dict[str, Any]:
    at = state.now()
    workspace_id = state.new_id()
    ws_dir = Path(st["root"]) / "workspaces" / workspace_id
    ws_dir.mkdir(parents=True, exist_ok=True)
    ws: dict[str, Any] = {
        "id": workspace_id,
        "name": name,
        "owner_id": owner["id"],
        "organization_id": st["organization"]["id"],
        "template_id": template["id"],
        "created_at": at,
        "updated_at": at,
        "last_used_at": at,
        "automatic_updates": "never",
        "ttl_ms": template.get("default_ttl_ms") or None,
        "parameters": build_params,
        "dir": str(ws_dir),
        "volume_id": state.new_id(),
        "agents": [],
        "deleted": False,
    }
    st["workspaces"][workspace_id] = ws
    return ws


# --- start / stop / delete --------------------------------------------------------------------


def cmd_start(inv: Invocation) -> int:
    """cli/start.go: already running / already starting / (clean up a failed start) and start."""
    args.require_args(inv.parsed, 1)
    client = init_client(inv, workspace_path(inv.parsed.args[0]))
    ws = resolve_workspace(client, inv.parsed.args[0])
    status = model.workspace_status(ws["build"], state.now())
    if status == "running":
        inv.stdout.write(f"\nThe {ws['name']} workspace is already running!\n")
        return 0
    if status in ("starting", "pending"):
        inv.stdout.write(f"\nThe {ws['name']} workspace is already starting.\n")
        _run_build(inv, ws["id"], inv.stdout)
    else:
        if status == "failed" and ws["build"]["transition"] == "start":
            inv.stdout.write("The last start build failed. Cleaning up before retrying...\n")
            _begin(inv, client, ws["id"], "stop")
            _run_build(inv, ws["id"], inv.stdout, prefix="wait for cleanup stop")
        _begin(inv, client, ws["id"], "start")
        _run_build(inv, ws["id"], inv.stdout)
    inv.stdout.write(f"\nThe {ws['name']} workspace has been started at {_stamp()}!\n")
    return 0


def _begin(inv: Invocation, client: Client, workspace_id: str, transition: str) -> None:
    with state.locked(inv.root) as locked_state:
        ws = locked_state["workspaces"][workspace_id]
        builds.begin(locked_state, ws, transition, initiator_id=client.user["id"])


def _wait_for_active_build(inv: Invocation, ws: dict[str, Any]) -> None:
    """The fake queues a new build behind an unfinished one instead of answering 409."""
    if not ws["build"].get("finalized"):
        builds.wait_until_complete(inv.root, ws["id"])


def cmd_stop(inv: Invocation) -> int:
    """cli/stop.go: confirm, then a stop build, then "The <name> workspace has been stopped"."""
    args.require_args(inv.parsed, 1)
    client = init_client(inv, workspace_path(inv.parsed.args[0]))
    prompts.confirm(inv, "Confirm stop workspace?")
    ws = resolve_workspace(client, inv.parsed.args[0])
    _wait_for_active_build(inv, ws)
    _begin(inv, client, ws["id"], "stop")
    _run_build(inv, ws["id"], inv.stdout)
    inv.stdout.write(f"\nThe {ws['name']} workspace has been stopped at {_stamp()}!\n")
    return 0


def cmd_delete(inv: Invocation) -> int:
    """cli/delete.go: "<owner>/<name> has been deleted at <time>!" (FullName, no "The")."""
    args.require_args(inv.parsed, 1)
    client = init_client(inv, workspace_path(inv.parsed.args[0]))
    ws = resolve_workspace(client, inv.parsed.args[0])
    full_name = f"{_owner_of(client.st, ws)['username']}/{ws['name']}"
    days = (state.now() - ws["last_used_at"]) / 86400
    inv.stderr.write(f"{full_name} was last used {days:.0f} days ago\n")
    prompts.confirm(inv, "Confirm delete workspace?", default_yes=False)
    _wait_for_active_build(inv, ws)
    _begin(inv, client, ws["id"], "delete")
    _run_build(inv, ws["id"], inv.stdout)
    inv.stdout.write(f"\n{full_name} has been deleted at {_stamp()}!\n")
    return 0


# --- ssh --------------------------------------------------------------------------------------


def normalize_target(target: str, prefix: str, suffix: str) -> str:
    """cli/ssh.go findWorkspaceAndAgentByHostname + normalizeWorkspaceInput."""
    if prefix and target.startswith(prefix):
        target = target[len(prefix) :]
    elif suffix and target.endswith("." + suffix):
        target = target[: -len(suffix) - 1]
    parts = re.split(r"[/.]+|--", target)
    if len(parts) == 2:
        return f"{parts[0]}.{parts[1]}" if "." in target else f"{parts[0]}/{parts[1]}"
    if len(parts) == 3:
        if "/" not in target and "--" not in target:
            return f"{parts[2]}/{parts[1]}.{parts[0]}"
        return f"{parts[0]}/{parts[1]}.{parts[2]}"
    return target


def cmd_ssh(inv: Invocation) -> int:
    """cli/ssh.go with cli/cliui/agent.go; only `--stdio` carries a session (see stdio.py)."""
    if not inv.parsed.args:
        raise CLIError("wanted 1 args but got 0 []")
    if not inv.parsed.flag("stdio"):
        raise CLIError("the fake coder CLI only supports `coder ssh --stdio <workspace>`")
    stdio_out = inv.stdout
    inv.stdout = inv.stderr  # in stdio mode every message goes to stderr
    target = normalize_target(
        inv.parsed.args[0], inv.parsed.text("ssh_host_prefix"), inv.parsed.text("hostname_suffix")
    )
    workspace_ref, _, agent_name = target.partition(".")
    client = init_client(inv, workspace_path(workspace_ref))
    ws = resolve_workspace(client, workspace_ref)
    ws = _ensure_started(inv, client, ws, workspace_ref)
    rec = _pick_agent(ws, agent_name, _owner_of(client.st, ws)["username"])
    with state.locked(inv.root) as locked_state:
        shutting_down = faults.take(locked_state, ws["name"], "ssh_shutting_down")
    if shutting_down:
        raise CLIError("agent is shutting down")
    _wait_for_agent(inv, ws["id"], rec["id"])
    from . import stdio

    return stdio.pipe(Path(rec["socket"]), stdio_out)


def _ensure_started(
    inv: Invocation, client: Client, ws: dict[str, Any], ref: str
) -> dict[str, Any]:
    """getWorkspaceAndAgent: autostart a stopped workspace unless --disable-autostart."""
    build = ws["build"]
    at = state.now()
    if build["transition"] != "start":
        if inv.parsed.flag("disable_autostart"):
            raise CLIError("workspace must be started")
        if build["transition"] == "delete":
            raise CLIError(f'workspace "{ws["name"]}" is deleted')
        if model.job_status(build, at) == "failed":
            raise CLIError(
                f'workspace "{ws["name"]}" is in failed state, unable to autostart the workspace'
            )
        status = model.workspace_status(build, at)
        if status != "stopped":
            raise CLIError(
                "workspace must be started; was unable to autostart as the last build job is "
                f'"{status}", expected "stopped"'
            )
        inv.stderr.write(
            f'Workspace was stopped, starting workspace to allow connecting to "{ws["name"]}"...\n'
        )
        _begin(inv, client, ws["id"], "start")
        try:
            _run_build(inv, ws["id"], inv.stderr)
        except CLIError as exc:
            raise exc.wrap("start workspace with current template version") from None
    elif not ws["build"].get("finalized"):
        _run_build(inv, ws["id"], inv.stderr)  # cliui.WorkspaceBuild on a build still running
    fresh: dict[str, Any] = state.load(inv.root)["workspaces"][ws["id"]]
    if model.job_status(fresh["build"], state.now()) == "failed":
        raise CLIError(fresh["build"]["error"])
    return fresh


def _pick_agent(ws: dict[str, Any], name: str, owner: str) -> dict[str, Any]:
    """getWorkspaceAgent: by name, else the only one; several and none named is an error.

    The names are listed sorted, and a second agent without a name gets `ssh` hints
    (tests/fixtures/coder-cli/ssh-stdio-unknown-agent.json,
    ssh-stdio-multi-agent-no-agent-name.json).
    """
    agents = ws.get("agents", [])
    if not agents:
        raise CLIError(f'workspace "{ws["name"]}" has no agents')
    names = sorted(rec["name"] for rec in agents)
    shown = "[" + " ".join(names) + "]"
    if name:
        for rec in agents:
            if rec["name"] == name or rec["id"] == name:
                found: dict[str, Any] = rec
                return found
        raise CLIError(f'agent not found by name "{name}", available agents: {shown}')
    if len(agents) == 1:
        only: dict[str, Any] = agents[0]
        return only
    hints = "".join(f"\n\t$ ssh {agent}.{ws['name']}.{owner}" for agent in names)
    raise CLIError(
        "multiple agents found, please specify the agent name, available agents: "
        f"{shown}\nTry running:{hints}\n"
    )


def _wait_for_agent(inv: Invocation, workspace_id: str, agent_id: str) -> None:
    """cliui.Agent: wait for `connected`, refuse a shutting-down agent, report startup scripts."""
    out = inv.stderr
    wait_flag = inv.parsed.text("wait") or "auto"
    waited_connect: float | None = None
    while True:
        st = state.load(inv.root)
        ws = st["workspaces"][workspace_id]
        rec = next((a for a in ws.get("agents", []) if a["id"] == agent_id), None)
        if rec is None:
            raise CLIError("agent is shutting down")
        view = model.agent_view(st, ws, rec, state.now())
        if view.lifecycle in model.SHUTTING_DOWN:
            raise CLIError("agent is shutting down")
        if view.status in ("connecting", "timeout"):
            if waited_connect is None:
                waited_connect = time.monotonic()
                out.write("==> ⧗ Waiting for the workspace agent to connect\n")
                out.flush()
            time.sleep(0.1)
            continue
        if view.status == "disconnected":
            if waited_connect is None:
                waited_connect = time.monotonic()
                out.write("==> ⧗ The workspace agent lost connection\n")
                out.write("Wait for it to reconnect or restart your workspace.\n")
                out.flush()
            time.sleep(0.1)
            continue
        if waited_connect is not None:
            elapsed = int((time.monotonic() - waited_connect) * 1000)
            out.write(f"=== ✔ Waiting for the workspace agent to connect [{elapsed}ms]\n")
        if view.lifecycle == "ready" and waited_connect is None:
            return
        _report_startup(inv, st, ws, rec, view, wait_flag)
        return


def _report_startup(
    inv: Invocation,
    st: state.State,
    ws: dict[str, Any],
    rec: dict[str, Any],
    view: model.AgentView,
    wait_flag: str,
) -> None:
    out = inv.stderr
    follow = wait_flag == "yes" or (wait_flag == "auto" and bool(rec.get("startup_blocks_login")))
    stage = "Running workspace agent startup scripts" + ("" if follow else " (non-blocking)")
    out.write(f"==> ⧗ {stage}\n")
    started = time.monotonic()
    while follow and view.lifecycle in model.STARTING:
        time.sleep(0.1)
        st = state.load(inv.root)
        ws = st["workspaces"][ws["id"]]
        rec = next(a for a in ws["agents"] if a["id"] == rec["id"])
        view = model.agent_view(st, ws, rec, state.now())
    elapsed = int((time.monotonic() - started) * 1000)
    docs = (
        "For more information and troubleshooting, see https://coder.com/docs/v2/latest/templates"
    )
    if view.lifecycle == "ready":
        out.write(f"=== ✔ {stage} [{elapsed}ms]\n")
    elif view.lifecycle == "start_timeout":
        out.write(f"=== ✘ {stage} [0ms]\n")
        out.write("Warning: A startup script timed out and your workspace may be incomplete.\n")
    elif view.lifecycle == "start_error":
        out.write(f"=== ✘ {stage} [{elapsed}ms]\n")
        out.write(
            "Warning: A startup script exited with an error and your workspace may be incomplete.\n"
        )
        out.write(f"{docs}#startup-script-exited-with-an-error\n")
    elif view.lifecycle in model.STARTING:
        out.write(
            "Notice: The startup scripts are still running and your workspace may be incomplete.\n"
        )
        out.write(f"{docs}#your-workspace-may-be-incomplete\n")
    elif view.lifecycle in model.SHUTTING_DOWN:
        out.write(f"=== ✔ {stage} [{elapsed}ms]\n")
        raise CLIError("agent is shutting down")
    out.flush()


# --- version ----------------------------------------------------------------------------------


def cmd_version(inv: Invocation) -> int:
    """cli/version.go: text (with the CRLFs the real one prints) or `-o json` (versionInfo)."""
    info = {
        "version": shapes.FAKE_VERSION,
        "build_time": "2026-01-01T00:00:00Z",
        "external_url": "https://github.com/coder/coder",
        "slim": False,
        "agpl": False,
        "boring_crypto": False,
    }
    fmt = inv.parsed.text("output") or "text"
    if fmt == "json":
        inv.stdout.write(shapes.dumps(info) + "\n")
    elif fmt == "text":
        inv.stdout.write(
            f"Coder {info['version']} Thu Jan  1 00:00:00 UTC 2026\r\n{info['external_url']}"
            "\r\n\r\nFull build of Coder, supports the server subcommand.\n"
        )
    else:
        raise CLIError(f'unknown output format "{fmt}"')
    return 0


# --- dispatch ---------------------------------------------------------------------------------

_PARAMETER_OPTIONS = (
    Option("parameter", ARRAY, env="CODER_RICH_PARAMETER"),
    Option("rich-parameter-file", env="CODER_RICH_PARAMETER_FILE"),
    Option("parameter-default", ARRAY, env="CODER_RICH_PARAMETER_DEFAULT"),
    Option("use-parameter-defaults", BOOL, env="CODER_WORKSPACE_USE_PARAMETER_DEFAULTS"),
)
_YES = Option("yes", BOOL, short="y")

COMMANDS: dict[str, Command] = {
    "whoami": Command("whoami", (Option("output", short="o"),), cmd_whoami, "whoami"),
    "list": Command(
        "list",
        (
            Option("all", BOOL, short="a"),
            Option("search", default="owner:me"),
            Option("column", ARRAY, short="c"),
            Option("output", short="o"),
        ),
        cmd_list,
        "list",
        aliases=("ls",),
    ),
    "create": Command(
        "create",
        (
            Option("template", short="t", env="CODER_TEMPLATE_NAME"),
            Option("template-version", env="CODER_TEMPLATE_VERSION"),
            Option("preset", env="CODER_PRESET_NAME"),
            Option("start-at", env="CODER_WORKSPACE_START_AT"),
            Option("stop-after", env="CODER_WORKSPACE_STOP_AFTER"),
            Option("automatic-updates", env="CODER_WORKSPACE_AUTOMATIC_UPDATES", default="never"),
            Option("copy-parameters-from", env="CODER_WORKSPACE_COPY_PARAMETERS_FROM"),
            Option("no-wait", BOOL),
            Option("org", short="O", env="CODER_ORGANIZATION"),
            _YES,
            *_PARAMETER_OPTIONS,
        ),
        cmd_create,
        "create [workspace]",
    ),
    "start": Command(
        "start",
        (Option("no-wait", BOOL), Option("template-version"), _YES, *_PARAMETER_OPTIONS),
        cmd_start,
        "start <workspace>",
    ),
    "stop": Command("stop", (_YES,), cmd_stop, "stop <workspace>"),
    "delete": Command(
        "delete", (Option("orphan", BOOL), _YES), cmd_delete, "delete <workspace>", aliases=("rm",)
    ),
    "ssh": Command(
        "ssh",
        (
            Option("stdio", BOOL, env="CODER_SSH_STDIO"),
            Option("ssh-host-prefix", env="CODER_SSH_SSH_HOST_PREFIX"),
            Option("hostname-suffix", env="CODER_SSH_HOSTNAME_SUFFIX"),
            Option("forward-agent", BOOL, short="A", env="CODER_SSH_FORWARD_AGENT"),
            Option("forward-gpg", BOOL, short="G", env="CODER_SSH_FORWARD_GPG"),
            Option("identity-agent", env="CODER_SSH_IDENTITY_AGENT"),
            Option("workspace-poll-interval", env="CODER_WORKSPACE_POLL_INTERVAL"),
            Option("wait", env="CODER_SSH_WAIT", default="auto"),
            Option("no-wait", BOOL, env="CODER_SSH_NO_WAIT"),
            Option("log-dir", short="l", env="CODER_SSH_LOG_DIR"),
            Option("remote-forward", ARRAY, short="R", env="CODER_SSH_REMOTE_FORWARD"),
            Option("env", ARRAY, short="e", env="CODER_SSH_ENV"),
            Option("disable-autostart", BOOL, env="CODER_SSH_DISABLE_AUTOSTART"),
            Option("tty", BOOL, short="t"),
            Option("network-info-dir"),
            Option("network-info-interval"),
        ),
        cmd_ssh,
        "ssh <workspace> [command]",
    ),
    "version": Command("version", (Option("output", short="o"),), cmd_version, "version"),
}
_ALIASES = {alias: cmd.name for cmd in COMMANDS.values() for alias in cmd.aliases}

_GLOBAL_VALUE_FLAGS = {f"--{o.long}" for o in args.GLOBAL_OPTIONS if o.kind != BOOL} | {
    f"-{o.short}" for o in args.GLOBAL_OPTIONS if o.short and o.kind != BOOL
}


def _split_command(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Find the subcommand; global flags may come before it (config-ssh writes them there)."""
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("-"):
            rest.append(token)
            if token in _GLOBAL_VALUE_FLAGS and i + 1 < len(argv):
                rest.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return token, rest + list(argv[i + 1 :])
    return None, rest


def _release_options(root: Path, command: Command) -> tuple[Option, ...]:
    """The command's flags in the emulated release: v2.27.0 has no --use-parameter-defaults."""
    try:
        settings = state.load(root)["settings"]
    except state.StateMissingError:
        settings = {}
    if settings.get("use_parameter_defaults"):
        return command.options
    return tuple(o for o in command.options if o.long != "use-parameter-defaults")


def _usage() -> str:
    lines = ["Usage: coder [global-flags] <subcommand>", "", "Commands (fake, sandlot.testing):"]
    lines += [f"  {cmd.usage}" for cmd in COMMANDS.values()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    home = env.get(state.HOME_ENV)
    if not home:
        sys.stderr.write(f"fake coder: {state.HOME_ENV} is not set\n")
        return 2
    name, rest = _split_command(argv)
    if name is None:
        sys.stdout.write(_usage())
        return 0
    command = COMMANDS.get(_ALIASES.get(name, name))
    if command is None:
        sys.stderr.write(
            f'Encountered an error running "coder", see "coder --help" for more information\n'
            f'error: unrecognized subcommand "{name}"\n'
        )
        return 1
    inv = Invocation(root=Path(home), command=command.name, parsed=args.Parsed(), env=env)
    inv.binary = binary_path()
    try:
        inv.parsed = args.parse(rest, _release_options(inv.root, command), env)
    except CLIError as exc:
        # serpent reports a flag error bare, with the whole argv, and without the
        # "Encountered an error" head (tests/fixtures/coder-cli/create-unknown-flag.json).
        sys.stderr.write(
            f'parsing flags ([{" ".join(argv)}]) for "coder {command.name}": {exc.message}\n'
        )
        return 1
    try:
        if inv.parsed.flag("help"):
            inv.stdout.write(f"Usage: coder {command.usage}\n")
            return 0
        _finish_pending(inv)
        return command.handler(inv)
    except ExitCode as exc:
        return exc.code
    except CLIError as exc:
        inv.stdout.flush()
        if not exc.silent:
            sys.stderr.write(exc.render(command.name) + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BrokenPipeError, ValueError):
                stream.flush()
