"""What the fake server would report right now: build status, agent status and lifecycle.

The server's progress is computed lazily from timestamps and process liveness instead of being
driven by a daemon: a build "completes" when its `completes_at` has passed (see builds.py for
who then finalises it), an agent is "connected" once its SSH server process listens on its
socket. Fault knobs (faults.py) bend these answers.
"""

from __future__ import annotations

import os

from . import faults, state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# codersdk/workspaceagents.go: WorkspaceAgentLifecycle.ShuttingDown() and .Starting().
SHUTTING_DOWN = frozenset({"shutting_down", "shutdown_timeout", "shutdown_error", "off"})
STARTING = frozenset({"created", "starting"})

AGENT_STATUSES = frozenset({"connecting", "connected", "disconnected", "timeout"})
LIFECYCLE_STATES = frozenset(
    {
        "created",
        "starting",
        "start_timeout",
        "start_error",
        "ready",
        "shutting_down",
        "shutdown_timeout",
        "shutdown_error",
        "off",
    }
)


def job_status(build: dict[str, Any], at: float) -> str:
    """codersdk.ProvisionerJobStatus of a build at time `at`."""
    if build.get("canceled"):
        return "canceled"
    if at < build["started_at"]:
        return "pending"
    if at < build["completes_at"]:
        return "running"
    return "failed" if build.get("error") else "succeeded"


def workspace_status(build: dict[str, Any], at: float) -> str:
    """codersdk.WorkspaceStatus, derived like coderd's convertWorkspaceBuild does."""
    job = job_status(build, at)
    transition = build["transition"]
    if job == "pending":
        return "pending"
    if job == "running":
        return {"start": "starting", "stop": "stopping", "delete": "deleting"}[transition]
    if job == "succeeded":
        return {"start": "running", "stop": "stopped", "delete": "deleted"}[transition]
    return job  # failed, canceled, canceling


class AgentView:
    """The agent fields that change over time, as coderd would serialise them.

    `expanded` tells whether expanded_directory is known (only once the agent has connected).
    A plain class rather than a dataclass: `dataclasses` costs the CLI milliseconds per call.
    """

    def __init__(
        self,
        status: str,
        lifecycle: str,
        first_connected_at: float | None = None,
        last_connected_at: float | None = None,
        disconnected_at: float | None = None,
        started_at: float | None = None,
        ready_at: float | None = None,
        expanded: bool = False,
    ) -> None:
        self.status = status
        self.lifecycle = lifecycle
        self.first_connected_at = first_connected_at
        self.last_connected_at = last_connected_at
        self.disconnected_at = disconnected_at
        self.started_at = started_at
        self.ready_at = ready_at
        self.expanded = expanded

    @property
    def healthy(self) -> bool:
        return health_reason(self) == ""


def health_reason(view: AgentView) -> str:
    """coderd/workspaceagents.go convertWorkspaceAgent: the `health.reason` switch."""
    if view.status != "connected" and view.lifecycle == "off":
        return "agent is not running"
    if view.status == "connecting":
        return "agent has not yet connected"
    if view.status == "timeout":
        return "agent is taking too long to connect"
    if view.status == "disconnected":
        return "agent has lost connection"
    if view.lifecycle == "start_error":
        return "agent startup script exited with an error"
    if view.lifecycle in SHUTTING_DOWN:
        return "agent is shutting down"
    return ""


def _socket_time(agent: dict[str, Any]) -> float | None:
    path = agent.get("socket")
    if not path:
        return None
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None


def agent_view(st: state.State, ws: dict[str, Any], agent: dict[str, Any], at: float) -> AgentView:
    """Status and lifecycle of one agent of a running workspace at time `at`."""
    listening_since = _socket_time(agent)
    alive = state.process_alive(agent.get("pid"), agent.get("pid_start"))
    held_back = agent.get("connect_lists_remaining", 0) > 0 or at < agent.get(
        "connect_not_before", 0.0
    )
    if not agent.get("pid") or (alive and (listening_since is None or held_back)):
        view = AgentView(status="connecting", lifecycle="created")
    elif not alive:
        first = listening_since or agent.get("spawned_at")
        view = AgentView(
            status="disconnected",
            lifecycle="ready",
            first_connected_at=first,
            last_connected_at=agent.get("last_seen_at", first),
            disconnected_at=agent.get("died_at", at),
            expanded=True,
        )
    else:
        assert listening_since is not None
        connected = max(listening_since, agent.get("connect_released_at", 0.0))
        ready = connected + float(agent.get("startup_seconds", 0.0))
        view = AgentView(
            status="connected",
            lifecycle="ready" if at >= ready else "starting",
            first_connected_at=connected,
            last_connected_at=at,
            started_at=connected,
            ready_at=ready if at >= ready else None,
            expanded=True,
        )
    knobs = faults.effective(st, ws["name"])
    forced_status = knobs.get("agent_status")
    if forced_status:
        view.status = forced_status
    forced_lifecycle = knobs.get("lifecycle")
    if forced_lifecycle and view.status == "connected":
        view.lifecycle = forced_lifecycle
        if forced_lifecycle in ("start_error", "start_timeout", "ready"):
            view.ready_at = view.ready_at or view.started_at
        elif forced_lifecycle in STARTING:
            view.ready_at = None
    return view


def running_agents(ws: dict[str, Any], at: float) -> bool:
    """True when the latest build is a completed, successful start (agents exist)."""
    build = ws["build"]
    return build["transition"] == "start" and job_status(build, at) == "succeeded"
