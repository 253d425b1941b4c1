"""JSON objects exactly as coderd serialises them, built from the fake's state.

Field names, order, nullability and omission follow coder's Go structs:

- codersdk.Workspace (codersdk/workspaces.go) and the golden
  cli/testdata/coder_list_--output_json.golden (also /work/shared/reference/coder-cli/
  list-output-json.golden.json): key order, `latest_app_status`/`deleting_at`/`dormant_at` null,
  `autostart_schedule` and `ttl_ms` omitted when unset (`omitempty` pointers).
- codersdk.WorkspaceBuild and codersdk.ProvisionerJob (codersdk/workspacebuilds.go,
  codersdk/provisionerdaemons.go): `started_at`/`completed_at`/`canceled_at`/`error`/
  `error_code`/`worker_id` are omitempty; the job `metadata` of a build is left zero-valued by
  coderd, as in the golden file.
- codersdk.WorkspaceResource (`agents` omitempty) and codersdk.WorkspaceAgent
  (codersdk/workspaceagents.go): the five connection/lifecycle timestamps and `instance_id`,
  `directory`, `expanded_directory`, `latency` are omitempty; slices are never null.
- `health.reason` strings: coderd/workspaceagents.go convertWorkspaceAgent (see model.py).

Go's encoding/json escapes <, > and & inside strings (HTML-safe) and sorts map keys; `dumps`
does the same so byte-for-byte comparisons with real output hold.
"""

from __future__ import annotations

import json
import os

from . import model, state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FAKE_VERSION = "v2.27.0+fake"  # the release the fake follows (tests/fixtures/coder-cli/)
AGENT_API_VERSION = "2.6"
_ZERO_UUID = "00000000-0000-0000-0000-000000000000"
_DISPLAY_APPS = [
    "vscode",
    "vscode_insiders",
    "web_terminal",
    "ssh_helper",
    "port_forwarding_helper",
]


def dumps(value: Any) -> str:
    """json.MarshalIndent(value, "", "  ") as Go prints it."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def host_architecture() -> str:
    machine = os.uname().machine.lower()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "armv7"}.get(machine, machine)


def job(st: state.State, ws: dict[str, Any], at: float) -> dict[str, Any]:
    build = ws["build"]
    status = model.job_status(build, at)
    out: dict[str, Any] = {"id": build["job_id"], "created_at": state.rfc3339(build["created_at"])}
    if status != "pending":
        out["started_at"] = state.rfc3339(build["started_at"])
    if status in ("succeeded", "failed", "canceled"):
        out["completed_at"] = state.rfc3339(build["completes_at"])
    if status == "canceled":
        out["canceled_at"] = state.rfc3339(build["completes_at"])
    if status == "failed":
        out["error"] = build["error"]
        if build.get("error_code"):
            out["error_code"] = build["error_code"]
    out["status"] = status
    if status != "pending":
        out["worker_id"] = st["provisioner_id"]
    out.update(
        {
            "file_id": build["file_id"],
            "tags": {"owner": "", "scope": "organization"},
            "queue_position": 0,
            "queue_size": 0,
            "organization_id": ws["organization_id"],
        }
    )
    if st["settings"].get("release", "v2.30.0") != "v2.27.0":
        # v2.30.0 names who started the job (tests/fixtures/coder-cli/list-running.json).
        out["initiator_id"] = build.get("initiator_id") or ws["owner_id"]
    out.update(
        {
            "input": {"workspace_build_id": build["id"]},
            "type": "workspace_build",
            "metadata": {
                "template_version_name": "",
                "template_id": _ZERO_UUID,
                "template_name": "",
                "template_display_name": "",
                "template_icon": "",
            },
            "logs_overflowed": False,  # v2.27.0 (older/v2.27.0/list-running.json)
        }
    )
    return out


def agent(st: state.State, ws: dict[str, Any], rec: dict[str, Any], at: float) -> dict[str, Any]:
    view = model.agent_view(st, ws, rec, at)
    out: dict[str, Any] = {
        "id": rec["id"],
        "parent_id": None,  # v2.27.0: set only for dev-container sub-agents (list-running.json)
        "created_at": state.rfc3339(rec["created_at"]),
        "updated_at": state.rfc3339(max(rec["created_at"], view.last_connected_at or 0.0)),
    }
    for key in ("first_connected_at", "last_connected_at", "disconnected_at"):
        value = getattr(view, key)
        if value is not None:
            out[key] = state.rfc3339(value)
    if view.started_at is not None and view.lifecycle not in ("created",):
        out["started_at"] = state.rfc3339(view.started_at)
    if view.ready_at is not None:
        out["ready_at"] = state.rfc3339(view.ready_at)
    out.update(
        {
            "status": view.status,
            "lifecycle_state": view.lifecycle,
            "name": rec["name"],
            "resource_id": rec["resource_id"],
            "architecture": rec.get("architecture") or host_architecture(),
            "environment_variables": dict(sorted(rec.get("env", {}).items())),
            "operating_system": rec.get("operating_system", "linux"),
            "logs_length": 0,
            "logs_overflowed": False,
        }
    )
    if rec.get("directory"):
        out["directory"] = rec["directory"]
        if view.expanded:
            out["expanded_directory"] = rec["expanded_directory"]
    scripts: list[dict[str, Any]] = []
    if rec.get("startup_script"):
        scripts.append(
            {
                "log_source_id": rec["log_source_id"],
                "log_path": "",
                "script": rec["startup_script"],
                "cron": "",
                "run_on_start": True,
                "run_on_stop": False,
                "start_blocks_login": bool(rec.get("startup_blocks_login")),
                "timeout": 0,
            }
        )
    reason = model.health_reason(view)
    out.update({"version": FAKE_VERSION, "api_version": AGENT_API_VERSION, "apps": []})
    if view.status == "connected":
        # DERP latency (omitempty), reported by a connected agent's stats; the fake's one relay
        # is the embedded one (tests/fixtures/coder-cli/list-running.json).
        out["latency"] = {"Coder Embedded Relay": {"preferred": True, "latency_ms": 0.5}}
    out.update(
        {
            "connection_timeout_seconds": 120,
            "troubleshooting_url": "",
            "subsystems": [],
            "health": {"healthy": True} if not reason else {"healthy": False, "reason": reason},
            "display_apps": list(_DISPLAY_APPS),
            "log_sources": [
                {
                    "workspace_agent_id": rec["id"],
                    "id": rec["log_source_id"],
                    "created_at": state.rfc3339(rec["created_at"]),
                    "display_name": "Startup Script",
                    "icon": "/emojis/25b6.png",
                }
            ]
            if scripts
            else [],
            "scripts": scripts,
            "startup_script_behavior": "blocking"
            if rec.get("startup_blocks_login")
            else "non-blocking",
        }
    )
    return out


def resources(st: state.State, ws: dict[str, Any], at: float) -> list[dict[str, Any]]:
    """Resources of the latest build: the home volume always, one container per agent when up."""
    build = ws["build"]
    if model.job_status(build, at) not in ("succeeded",) or build["transition"] == "delete":
        return []
    out: list[dict[str, Any]] = []
    for res in build.get("resources", []):
        item: dict[str, Any] = {
            "id": res["id"],
            "created_at": state.rfc3339(res["created_at"]),
            "job_id": build["job_id"],
            "workspace_transition": build["transition"],
            "type": res["type"],
            "name": res["name"],
            "hide": False,
            "icon": "",
        }
        agents = [
            agent(st, ws, rec, at)
            for rec in ws.get("agents", [])
            if rec["resource_id"] == res["id"]
        ]
        if agents:
            item["agents"] = agents
        # `metadata` is omitempty and the fake's resources carry none
        # (tests/fixtures/coder-cli/list-running.json).
        item["daily_cost"] = 0
        out.append(item)
    return out


def workspace_build(
    st: state.State, ws: dict[str, Any], owner: dict[str, Any], at: float
) -> dict[str, Any]:
    build = ws["build"]
    initiator = next((u for u in st["users"] if u["id"] == build["initiator_id"]), owner)
    status = model.workspace_status(build, at)
    deadline = None
    if status == "running" and ws.get("ttl_ms"):
        deadline = state.rfc3339(build["completes_at"] + ws["ttl_ms"] / 1000.0)
    return {
        "id": build["id"],
        "created_at": state.rfc3339(build["created_at"]),
        "updated_at": state.rfc3339(min(at, build["completes_at"])),
        "workspace_id": ws["id"],
        "workspace_name": ws["name"],
        "workspace_owner_id": owner["id"],
        "workspace_owner_name": owner["username"],
        "template_version_id": build["template_version_id"],
        "template_version_name": build["template_version_name"],
        "build_number": build["number"],
        "transition": build["transition"],
        "initiator_id": initiator["id"],
        "initiator_name": initiator["username"],
        "job": job(st, ws, at),
        "reason": build.get("reason", "initiator"),
        "resources": resources(st, ws, at),
        "deadline": deadline,
        "max_deadline": None,
        "status": status,
        "daily_cost": 0,
        "matched_provisioners": {
            "count": 1,
            "available": 1,
            "most_recently_seen": state.rfc3339(at),
        },
        "template_version_preset_id": build.get("preset_id"),
        # v2.27.0 adds these two (tests/fixtures/coder-cli/list-running.json).
        "has_ai_task": False,
        "has_external_agent": False,
    }


def workspace(st: state.State, ws: dict[str, Any], at: float) -> dict[str, Any]:
    owner = next(u for u in st["users"] if u["id"] == ws["owner_id"])
    template = next(t for t in st["templates"].values() if t["id"] == ws["template_id"])
    build = workspace_build(st, ws, owner, at)
    failing = [
        a["id"]
        for res in build["resources"]
        for a in res.get("agents", [])
        if not a["health"]["healthy"]
    ]
    out: dict[str, Any] = {
        "id": ws["id"],
        "created_at": state.rfc3339(ws["created_at"]),
        "updated_at": state.rfc3339(ws["updated_at"]),
        "owner_id": owner["id"],
        "owner_name": owner["username"],
        "owner_avatar_url": "",
        "organization_id": ws["organization_id"],
        "organization_name": st["organization"]["name"],
        "template_id": template["id"],
        "template_name": template["name"],
        "template_display_name": template.get("display_name", ""),
        "template_icon": template.get("icon", ""),
        "template_allow_user_cancel_workspace_jobs": False,
        "template_active_version_id": template["active_version_id"],
        "template_require_active_version": False,
        "template_use_classic_parameter_flow": False,
        "latest_build": build,
        "latest_app_status": None,
        "outdated": build["template_version_id"] != template["active_version_id"],
        "name": ws["name"],
    }
    if ws.get("autostart_schedule"):
        out["autostart_schedule"] = ws["autostart_schedule"]
    if ws.get("ttl_ms"):
        out["ttl_ms"] = ws["ttl_ms"]
    out.update(
        {
            "last_used_at": state.rfc3339(ws["last_used_at"]),
            "deleting_at": None,
            "dormant_at": None,
            "health": {"healthy": not failing, "failing_agents": failing},
            "automatic_updates": ws.get("automatic_updates", "never"),
            "allow_renames": False,
            "favorite": False,
            "next_start_at": None,
            # v2.27.0 adds is_prebuild (tests/fixtures/coder-cli/older/v2.27.0/list-running.json).
            "is_prebuild": False,
        }
    )
    if st["settings"].get("release", "v2.30.0") != "v2.27.0":
        # v2.30.0 adds task_id, null outside AI tasks (tests/fixtures/coder-cli/list-running.json).
        out["task_id"] = None
    return out


def whoami_row(st: state.State, user: dict[str, Any], url: str) -> dict[str, Any]:
    """cli/whoami.go whoamiRow, JSON tags only (url, username, user_id, organization_ids, roles)."""
    roles: dict[str, list[str]] = {}
    for role in user.get("roles", []):
        roles.setdefault("*", []).append(role)
    return {
        "url": url,
        "username": user["username"],
        "user_id": user["id"],
        "organization_ids": [st["organization"]["id"]],
        "roles": dict(sorted(roles.items())),
    }
