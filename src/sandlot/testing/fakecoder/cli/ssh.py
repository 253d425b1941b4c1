"""coder ssh (cli/ssh.go): find the workspace and agent, start it if it is stopped, wait for
the agent (cli/cliui/agent.go); only `--stdio` carries a session (see ../stdio.py)."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from .. import faults, model, state
from ..errors import CLIError
from ..session import Client, Invocation, init_client
from .cliui import run_build, wait_for_agent
from .root import begin, owner_of, resolve_workspace, workspace_path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


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
    rec = _pick_agent(ws, agent_name, owner_of(client.st, ws)["username"])
    with state.locked(inv.root) as locked_state:
        shutting_down = faults.take(locked_state, ws["name"], "ssh_shutting_down")
    if shutting_down:
        raise CLIError("agent is shutting down")
    wait_for_agent(inv, ws["id"], rec["id"])
    _autostop_lock(ws["id"])
    from .. import stdio

    return stdio.pipe(Path(rec["socket"]), stdio_out)


def _autostop_lock(workspace_id: str) -> None:
    """cli/ssh.go tryPollWorkspaceAutostop: `flock.New(filepath.Join(os.TempDir(),
    "coder-autostop-notify-"+workspace.ID))`, polled at once once the agent is reachable (the
    file is made with O_CREATE|O_RDONLY, 0600), and never removed by coder."""
    name = f"coder-autostop-notify-{workspace_id}"
    path = os.path.join(os.environ.get("TMPDIR") or "/tmp", name)
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_CREAT | os.O_RDONLY, 0o600))


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
        begin(inv, client, ws["id"], "start")
        try:
            run_build(inv, ws["id"], inv.stderr)
        except CLIError as exc:
            raise exc.wrap("start workspace with current template version") from None
    elif not ws["build"].get("finalized"):
        run_build(inv, ws["id"], inv.stderr)  # cliui.WorkspaceBuild on a build still running
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
