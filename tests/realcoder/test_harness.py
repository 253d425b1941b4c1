"""Smoke test of the real Coder deployment: the CLI verbs sandlot uses, end to end."""

from __future__ import annotations

import json
import shlex
import subprocess
from typing import Any

from tests.helpers import require_binary

from .harness import RealCoder


def _ssh(real_coder: RealCoder, target: str, command: str) -> subprocess.CompletedProcess[str]:
    """OpenSSH through `coder ssh --stdio`, as sandlot connects (never ~/.ssh/config)."""
    ssh = require_binary("ssh", "apt-get install openssh-client")
    proxy = f"{shlex.quote(str(real_coder.binary))} ssh --stdio {shlex.quote(target)}"
    return subprocess.run(
        [
            ssh,
            "-F",
            "/dev/null",
            "-o",
            f"ProxyCommand={proxy}",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "LogLevel=ERROR",
            "-o",
            "BatchMode=yes",
            f"coder.{target}",
            command,
        ],
        env=real_coder.cli_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, f"exit {out.returncode}\nstdout: {out.stdout}\nstderr: {out.stderr}"
    return out.stdout


def _workspace(real_coder: RealCoder, name: str) -> dict[str, Any]:
    matches = [w for w in real_coder.list_workspaces() if w["name"] == name]
    assert len(matches) == 1, f"expected one workspace {name}, got {len(matches)}"
    return matches[0]


def test_whoami_is_the_first_user(real_coder: RealCoder) -> None:
    me = json.loads(_ok(real_coder.coder("whoami", "-o", "json")))
    assert isinstance(me, list) and len(me) == 1
    assert me[0]["username"] == real_coder.username
    assert me[0]["url"].rstrip("/") == real_coder.url


def test_create_ssh_stop_start_delete(real_coder: RealCoder) -> None:
    name = "smoke"
    out = _ok(real_coder.coder("create", name, "-t", real_coder.template_single, "--yes"))
    assert f"The {name} workspace has been created" in out

    (agent,) = real_coder.wait_for_agents(name)
    assert agent["name"] == "main"
    assert agent["expanded_directory"].endswith("/project")

    hi = _ssh(real_coder, name, "echo hi; pwd")
    assert _ok(hi).splitlines() == ["hi", agent["expanded_directory"]]

    out = _ok(real_coder.coder("stop", name, "--yes"))
    assert f"The {name} workspace has been stopped" in out
    ws = _workspace(real_coder, name)
    assert ws["latest_build"]["transition"] == "stop"
    assert ws["latest_build"]["status"] == "stopped"

    out = _ok(real_coder.coder("start", name, "--yes"))
    assert f"The {name} workspace has been started" in out
    (again,) = real_coder.wait_for_agents(name)
    assert again["id"] != agent["id"], "a new start build makes a new agent"
    assert _ok(_ssh(real_coder, name, "echo again")).strip() == "again"

    out = _ok(real_coder.coder("start", name, "--yes"))
    assert f"The {name} workspace is already running" in out

    out = _ok(real_coder.coder("delete", name, "--yes"))
    # Unlike create/start/stop, delete names the workspace owner/name.
    assert f"{real_coder.username}/{name} has been deleted" in out
    assert [w for w in real_coder.list_workspaces() if w["name"] == name] == []
    assert real_coder.agent_errors() == []


def test_two_agents_each_reachable(real_coder: RealCoder) -> None:
    name = "smoke-multi"
    _ok(real_coder.coder("create", name, "-t", real_coder.template_multi, "--yes"))
    agents = real_coder.wait_for_agents(name)
    assert sorted(a["name"] for a in agents) == ["aux", "main"]
    homes = {a: _ok(_ssh(real_coder, f"{name}.{a}", "echo $HOME")).strip() for a in ("main", "aux")}
    assert homes["main"] != homes["aux"], "each agent is its own machine"
    _ok(real_coder.coder("delete", name, "--yes"))
