"""Workspace builds: starting one, printing its log, and letting the fake "server" finish it.

A build is a record with `created_at`, `started_at` and `completes_at`; model.py derives the job
status from the clock. Whatever happens on the server when a build completes (agents come up
for a start, go away for a stop or delete) is done by `finalize_due`, which every CLI call runs
first: if `coder create` is killed half-way, the next `coder` call still finishes the build, as
coderd would.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
from pathlib import Path

from . import faults, model, state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

_STAGES = {
    "start": "Starting workspace",
    "stop": "Stopping workspace",
    "delete": "Destroying workspace",
}


def begin(
    st: state.State,
    ws: dict[str, Any],
    transition: str,
    *,
    initiator_id: str,
    reason: str = "initiator",
    version_id: str | None = None,
) -> dict[str, Any]:
    """Queue a build of `transition` as the workspace's latest build (caller holds the lock)."""
    template = next(t for t in st["templates"].values() if t["id"] == ws["template_id"])
    at = state.now()
    duration = float(template.get("build_seconds", 0.0))
    failure = faults.take_entry(st, ws["name"], "build_failures", transition)
    previous = ws.get("build")
    version_id = (
        version_id or (previous or {}).get("template_version_id") or template["active_version_id"]
    )
    version_name = next(n for n, i in template["versions"].items() if i == version_id)
    build = {
        "id": state.new_id(),
        "number": (previous["number"] + 1) if previous else 1,
        "transition": transition,
        "reason": reason,
        "initiator_id": initiator_id,
        "job_id": state.new_id(),
        "file_id": template["file_id"],
        "template_version_id": version_id,
        "template_version_name": version_name,
        "created_at": at,
        "started_at": at,
        "completes_at": at + duration,
        "error": failure["error"] if failure else None,
        "finalized": False,
        "resources": (previous or {}).get("resources", []) if transition != "start" else [],
    }
    ws["build"] = build
    ws["updated_at"] = at
    ws["last_used_at"] = at
    return build


def stream_log(out: TextIO, build: dict[str, Any], agent_names: list[str]) -> None:
    """Print the build the way cliui.ProvisionerJob does (cli/cliui/provisionerjob.go).

    Stage lines are ``==> ⧗ <stage>`` then ``=== ✔ <stage> [<ms>ms]`` (``✘`` on failure); log
    lines carry a local timestamp (``2006-01-02 15:04:05.000Z07:00``). The fake sleeps through
    the template's build time so that a build can be interrupted half-way.
    """
    transition = build["transition"]
    total = max(0.0, build["completes_at"] - time.time())
    stages: list[tuple[str, list[str]]] = [
        ("Setting up", []),
        ("Parsing template parameters", []),
        ("Detecting persistent resources", ["Terraform 1.9.8"]),
        ("Detecting ephemeral resources", []),
        ("Planning infrastructure", ["Plan: 1 to add, 0 to change, 0 to destroy."]),
        (_STAGES[transition], _apply_lines(transition, agent_names)),
        ("Cleaning Up", []),
    ]
    pause = total / len(stages) if total else 0.0

    def line(text: str) -> None:
        moment = time.time()
        local = time.localtime(moment)
        millis = int((moment % 1) * 1000)
        offset = time.strftime("%z", local)
        zone = "Z" if offset in ("+0000", "-0000") else f"{offset[:3]}:{offset[3:]}"
        out.write(f"{time.strftime('%Y-%m-%d %H:%M:%S', local)}.{millis:03d}{zone} {text}\n")

    out.write("==> ⧗ Queued\n")
    out.write("=== ✔ Queued [0ms]\n")
    out.write("==> ⧗ Running\n")
    out.write("=== ✔ Running [1ms]\n")
    failed = bool(build.get("error"))
    for index, (stage, lines) in enumerate(stages):
        started = time.monotonic()
        out.write(f"==> ⧗ {stage}\n")
        out.flush()
        if pause:
            time.sleep(pause)
        for text in lines:
            line(text)
        elapsed = int((time.monotonic() - started) * 1000)
        last_real_stage = index == len(stages) - 2
        if failed and last_real_stage:
            line(f"Error: {build['error']}")
            out.write(f"=== ✘ {stage} [{elapsed}ms]\n")
            out.flush()
            return
        out.write(f"=== ✔ {stage} [{elapsed}ms]\n")
        out.flush()


def _apply_lines(transition: str, agent_names: list[str]) -> list[str]:
    verb = {"start": "Creating", "stop": "Destroying", "delete": "Destroying"}[transition]
    done = {
        "start": "Creation complete",
        "stop": "Destruction complete",
        "delete": "Destruction complete",
    }[transition]
    lines: list[str] = []
    for name in agent_names:
        lines.append(f"docker_container.{name}[0]: {verb}...")
        lines.append(f"docker_container.{name}[0]: {done} after 0s")
    count = len(agent_names)
    if transition == "start":
        lines.append(f"Apply complete! Resources: {count} added, 0 changed, 0 destroyed.")
    else:
        lines.append(f"Apply complete! Resources: 0 added, 0 changed, {count} destroyed.")
    return lines


def wait_until_complete(root: Path, workspace_id: str) -> dict[str, Any]:
    """Block until the workspace's latest build has completed and been finalised."""
    while True:
        st = state.load(root)
        ws: dict[str, Any] = st["workspaces"][workspace_id]
        build = ws["build"]
        if build.get("finalized"):
            return ws
        delay = build["completes_at"] - time.time()
        if delay > 0:
            time.sleep(min(delay, 0.2))
            continue
        with state.locked(root) as locked_state:
            finalize_due(root, locked_state)


def finalize_due(root: Path, st: state.State) -> None:
    """Apply the server-side effects of every completed, not yet finalised build (lock held)."""
    at = state.now()
    for ws in st["workspaces"].values():
        build = ws.get("build")
        if not build or build.get("finalized") or at < build["completes_at"]:
            continue
        build["finalized"] = True
        if build.get("error"):
            continue
        if build["transition"] == "start":
            _bring_up(root, st, ws, build)
        elif build["transition"] == "stop":
            _tear_down(ws)
            build["resources"] = [_volume(ws, build)]
        else:
            _tear_down(ws)
            build["resources"] = []
            ws["deleted"] = True
            # rm -rf, not shutil.rmtree: a workspace can hold a tree deeper than Python's
            # recursion limit, or directories its code made unreadable (this package runs
            # standalone as the fake `coder` binary, so it cannot import sandlot._tree).
            subprocess.run(["chmod", "-R", "u+rwx", "--", ws["dir"]], capture_output=True)
            subprocess.run(["rm", "-rf", "--", ws["dir"]], capture_output=True)


def due(st: state.State) -> bool:
    """Cheap check, without the lock: is there a build to finalise?"""
    at = state.now()
    return any(
        not ws["build"].get("finalized") and at >= ws["build"]["completes_at"]
        for ws in st["workspaces"].values()
        if ws.get("build")
    )


def _volume(ws: dict[str, Any], build: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": ws["volume_id"],
        "created_at": ws["created_at"],
        "type": "docker_volume",
        "name": "home_volume",
        "agent_resource": False,
    }


def _expand(directory: str | None, home: Path) -> str | None:
    if not directory:
        return None
    for prefix in ("~/", "$HOME/"):
        if directory.startswith(prefix):
            return str(home / directory[len(prefix) :])
    if directory in ("~", "$HOME"):
        return str(home)
    path = Path(directory)
    return str(path if path.is_absolute() else home / path)


def _bring_up(root: Path, st: state.State, ws: dict[str, Any], build: dict[str, Any]) -> None:
    template = next(t for t in st["templates"].values() if t["id"] == ws["template_id"])
    owner = next(u for u in st["users"] if u["id"] == ws["owner_id"])
    knobs = faults.effective(st, ws["name"])
    at = state.now()
    resources = [_volume(ws, build)]
    agents: list[dict[str, Any]] = []
    for spec in template["agents"]:
        resource_id = state.new_id()
        resources.append(
            {
                "id": resource_id,
                "created_at": at,
                "type": "docker_container",
                "name": spec["name"],
                "agent_resource": True,
            }
        )
        home = Path(ws["dir"]) / spec["name"]
        home.mkdir(parents=True, exist_ok=True)
        expanded = _expand(spec.get("directory"), home)
        if expanded:
            Path(expanded).mkdir(parents=True, exist_ok=True)
        agent_id = state.new_id()
        agents.append(
            {
                "id": agent_id,
                "name": spec["name"],
                "resource_id": resource_id,
                "created_at": at,
                "home": str(home),
                "directory": spec.get("directory") or "",
                "expanded_directory": expanded or "",
                "operating_system": spec.get("operating_system", "linux"),
                "architecture": spec.get("architecture", ""),
                "env": dict(spec.get("env", {})),
                "startup_script": spec.get("startup_script", ""),
                "startup_blocks_login": bool(spec.get("startup_blocks_login", False)),
                "startup_seconds": float(spec.get("startup_seconds", 0.0)),
                "log_source_id": state.new_id(),
                "socket": str(Path(st["runtime_dir"]) / f"{agent_id}.sock"),
                "owner_name": owner["username"],
                "workspace_name": ws["name"],
                "connect_lists_remaining": int(knobs.get("connect_delay_lists", 0)),
                "connect_not_before": at + float(knobs.get("connect_delay_seconds", 0.0)),
                "pid": None,
                "pid_start": None,
            }
        )
    build["resources"] = resources
    ws["agents"] = agents
    if st.get("halted"):
        return
    from . import daemon

    for rec in agents:
        rec["pid"], rec["pid_start"] = daemon.spawn(root, rec["id"])
        rec["spawned_at"] = state.now()


def _tear_down(ws: dict[str, Any]) -> None:
    for rec in ws.get("agents", []):
        state.terminate(rec.get("pid"), rec.get("pid_start"))
        with contextlib.suppress(OSError):
            Path(rec["socket"]).unlink()
    ws["agents"] = []


def stop_all_agents(st: state.State) -> list[int]:
    """Kill every agent process of the deployment (shutdown); return the pids that were stopped."""
    stopped: list[int] = []
    for ws in st["workspaces"].values():
        for rec in ws.get("agents", []):
            pid = rec.get("pid")
            if pid and state.process_alive(pid, rec.get("pid_start")):
                state.terminate(pid, rec.get("pid_start"))
                stopped.append(pid)
            rec["died_at"] = rec.get("died_at") or state.now()
            with contextlib.suppress(OSError):
                Path(rec["socket"]).unlink()
    return stopped


def is_running(ws: dict[str, Any]) -> bool:
    return model.running_agents(ws, state.now())
