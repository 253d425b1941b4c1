"""What coder's cli/cliui package prints: timestamps, the build log (WorkspaceBuild), tables,
and the wait for an agent with its startup report (cliui.Agent)."""

from __future__ import annotations

import time

from .. import builds, model, state
from ..errors import CLIError
from ..session import Invocation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def stamp() -> str:
    """cliui.Timestamp: Go's time.Stamp layout, "Jan _2 15:04:05", local time."""
    return time.strftime("%b %e %H:%M:%S")


def run_build(inv: Invocation, workspace_id: str, out: Any, prefix: str = "") -> dict[str, Any]:
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


def table(rows: list[dict[str, Any]]) -> str:
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


def wait_for_agent(inv: Invocation, workspace_id: str, agent_id: str) -> None:
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
