"""Run a real `coder agent` for every agent of every started workspace.

With Terraform, a workspace's VM or container runs the agent; with the echo
provisioner nothing does. This supervisor plays the machine: it polls the API,
and for each agent of a workspace whose latest build is a successful `start` it
starts `coder agent` as a local process (its $HOME and directory in a temp dir
of that workspace); when the workspace's latest build is anything else (stop,
delete, a new start with new agents) or the workspace is gone, the agent process
is stopped, as the machine going away would stop it.

Agents are matched by agent id: each start build creates new agent rows with new
ids and tokens, so a restart gets a fresh process with the fresh token.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from sandlot.testing.ports import listen_port

from .procs import Service

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WantedAgent:
    """An agent that should be running: from the latest build of a workspace."""

    agent_id: str
    agent_name: str
    workspace_id: str
    workspace_name: str


def wanted_agents(workspaces: list[dict[str, object]]) -> list[WantedAgent]:
    """Agents of workspaces whose latest build is a successful start."""
    out: list[WantedAgent] = []
    for ws in workspaces:
        build = ws.get("latest_build")
        if not isinstance(build, dict):
            continue
        job = build.get("job")
        job_status = job.get("status") if isinstance(job, dict) else None
        if build.get("transition") != "start" or job_status != "succeeded":
            continue
        for resource in build.get("resources") or []:
            for agent in resource.get("agents") or []:
                out.append(
                    WantedAgent(
                        agent_id=str(agent["id"]),
                        agent_name=str(agent["name"]),
                        workspace_id=str(ws["id"]),
                        workspace_name=str(ws["name"]),
                    )
                )
    return out


class AgentSupervisor:
    """A thread that keeps local agent processes in step with the deployment."""

    def __init__(
        self,
        *,
        binary: Path,
        url: str,
        session_token: str,
        token_for_agent: Callable[[str], str],
        root: Path,
        interval: float = 0.5,
    ) -> None:
        self._binary = binary
        self._url = url.rstrip("/")
        self._session_token = session_token
        self._token_for_agent = token_for_agent
        self._root = root
        self._interval = interval
        self._running: dict[str, Service] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="coder-agents", daemon=True)
        self.errors: list[str] = []
        self.started_count = 0

    def start(self) -> AgentSupervisor:
        self._thread.start()
        return self

    def running_agent_ids(self) -> set[str]:
        return set(self._running)

    def services(self) -> list[Service]:
        return list(self._running.values())

    def _list_workspaces(self) -> list[dict[str, object]]:
        req = urllib.request.Request(
            f"{self._url}/api/v2/workspaces?limit=0",
            headers={"Coder-Session-Token": self._session_token, "Accept": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.load(resp)
        workspaces = body.get("workspaces") or []
        return list(workspaces)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.sync_once()
            except Exception as exc:  # keep supervising; record for the report
                msg = f"agent supervisor: {type(exc).__name__}: {exc}"
                if not self.errors or self.errors[-1] != msg:
                    self.errors.append(msg)
                    log.warning(msg)
            self._stop.wait(self._interval)
        # Stopped from this thread on purpose: the agents were spawned with
        # --pdeathsig from it, so they must be gone before the thread ends.
        for agent_id in list(self._running):
            self._running.pop(agent_id).stop(grace=10.0)

    def sync_once(self) -> None:
        wanted = {w.agent_id: w for w in wanted_agents(self._list_workspaces())}
        for agent_id in list(self._running):
            if agent_id not in wanted:
                self._running.pop(agent_id).stop(grace=10.0)
        for agent_id, w in wanted.items():
            service = self._running.get(agent_id)
            if service is not None and service.exited() is None:
                continue
            if service is not None:  # it died: say why, then run it again
                self.errors.append(service.exited() or "agent exited")
            self._running[agent_id] = self._start_agent(w)

    def _start_agent(self, w: WantedAgent) -> Service:
        uuid.UUID(w.agent_id)  # it goes into SQL: be sure it is only a UUID
        token = self._token_for_agent(w.agent_id)
        base = self._root / f"{w.workspace_name}-{w.workspace_id[:8]}" / w.agent_name
        home = base / "home"
        # The template's directory is "~/project": make it exist, as an image would.
        (home / "project").mkdir(parents=True, exist_ok=True)
        (base / "logs").mkdir(exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOME": str(home),
            "USER": os.environ.get("USER", "root"),
            "CODER_AGENT_URL": self._url,
            "CODER_AGENT_TOKEN": token,
            "CODER_AGENT_AUTH": "token",
            "CODER_AGENT_LOG_DIR": str(base / "logs"),
            "CODER_AGENT_SCRIPT_DATA_DIR": str(base / "scripts"),
            # Each agent would otherwise bind the same fixed debug ports.
            "CODER_AGENT_PPROF_ADDRESS": f"127.0.0.1:{listen_port()}",
            "CODER_AGENT_PROMETHEUS_ADDRESS": f"127.0.0.1:{listen_port()}",
            "CODER_AGENT_DEBUG_ADDRESS": f"127.0.0.1:{listen_port()}",
            # No docker here, and nothing to discover.
            "CODER_AGENT_DEVCONTAINERS_ENABLE": "false",
        }
        self.started_count += 1
        return Service(
            name=f"agent {w.workspace_name}.{w.agent_name}",
            argv=[str(self._binary), "agent", "--no-reap"],
            env=env,
            log_path=base / "agent.log",
            cwd=home,
        ).start()

    def stop(self) -> None:
        """Stop the thread, which stops every agent process on its way out."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=120)
        # Only reached with leftovers if the thread never started or hung.
        for agent_id in list(self._running):
            self._running.pop(agent_id).stop(grace=10.0)
