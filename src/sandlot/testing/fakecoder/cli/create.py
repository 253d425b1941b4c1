"""coder create (cli/create.go): template, preset and parameters, then the first build."""

from __future__ import annotations

from pathlib import Path

from .. import builds, faults, params, prompts, state
from ..errors import CLIError, api_error, not_found
from ..session import Invocation, init_client, query_path
from .cliui import run_build, stamp
from .root import NAME_RE, split_named

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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

    With presets, `--preset none` prints "No preset applied." (and a newline from v2.30 on;
    none in v2.27), a named one prints
    its values, and none given needs a terminal to choose: without one the real CLI fails
    (tests/fixtures/coder-cli/create-params-no-preset.json, -preset-none.json, -preset.json).
    """
    presets: dict[str, Any] = template.get("presets", {})
    preset_name = inv.parsed.text("preset")
    if preset_name.lower() == "none":
        if presets:
            older = state.load(inv.root)["settings"].get("release") == "v2.27.0"
            inv.stdout.write("No preset applied." if older else "No preset applied.\n")
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
    run_build(inv, workspace_id, inv.stdout, prefix="watch build")
    if failure:
        raise CLIError(failure["message"].format(url=client.url.rstrip("/"), build_id=build["id"]))
    inv.stdout.write(f"\nThe {name} workspace has been created at {stamp()}!\n")
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
