"""The Coder deployment the coder-backend tests run against, seen only through the `coder` CLI.

`Deployment` is all a lifecycle test may use, so the same test bodies run on the fake
(`sandlot.testing`) and on a real Coder server (tests/realcoder): the `deployment` fixture is
parametrized over both. Fault-injection tests take the fake itself (`FakeDeployment.fake`).
"""

from __future__ import annotations

import copy
import json
import os
import shlex
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import sandlot
from sandlot.backends.coder.provider import CoderProvider
from sandlot.testing import AgentSpec, FakeCoderDeployment, ParameterSpec

# Template names every deployment provides (a real harness maps them to its own).
SINGLE = "single"  # one agent "main", directory "project"
MULTI = "multi"  # agents "main" and "aux"
PLAIN = "plain"  # one agent without a directory
PARAMS = "params"  # parameters region (default eu) and size (default s), preset "fast", v1/v2


class Deployment:
    """A Coder deployment reachable with `binary` + `url` + `token`; `kind` is fake or real."""

    def __init__(
        self,
        *,
        binary: Path,
        url: str,
        token: str,
        username: str,
        templates: dict[str, str],
        config_dir: Path,
        organization: str = "",
        template_versions: Sequence[str] = (),
        kind: str = "generic",
    ) -> None:
        self.kind = kind
        self.binary = binary
        self.url = url
        self.token = token
        self.username = username
        self.templates = templates
        self.config_dir = config_dir
        self.organization = organization
        self.template_versions = list(template_versions)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url}>"

    def as_user(self, token: str) -> Deployment:
        """The same deployment, driven with another user's session token."""
        clone = copy.copy(self)
        clone.token = token
        return clone

    def template(self, role: str) -> str:
        """The deployment's template for a role (SINGLE, MULTI, ...); every deployment has all."""
        assert role in self.templates, f"the {self.kind} deployment has no {role!r} template"
        return self.templates[role]

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "CODER_URL": self.url,
            "CODER_SESSION_TOKEN": self.token,
            "CODER_CONFIG_DIR": str(self.config_dir),
        }

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run the deployment's `coder` directly (test setup and assertions)."""
        proc = subprocess.run(
            [str(self.binary), *args], env=self.env(), capture_output=True, text=True,
            stdin=subprocess.DEVNULL, timeout=300, check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"coder {shlex.join(args)} failed: {proc.stderr}")
        return proc

    def workspaces(self) -> list[dict[str, Any]]:
        out = self.cli("list", "--all", "-o", "json").stdout
        found: list[dict[str, Any]] = json.loads(out) if out.strip() else []
        return found

    def find(self, name: str) -> dict[str, Any] | None:
        for ws in self.workspaces():
            if ws["name"] == name:
                return ws
        return None

    def status(self, name: str) -> str | None:
        """`latest_build.status` of a workspace, None when it does not exist."""
        ws = self.find(name)
        return None if ws is None else str(ws["latest_build"]["status"])

    def create_workspace(self, name: str, template: str) -> dict[str, Any]:
        """Create a workspace outside sandlot and wait until its agents are ready."""
        self.cli("create", name, "--template", template, "--yes")
        return self.wait_ready(name)

    def wait_ready(self, name: str, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            ws = self.find(name)
            agents = [
                a
                for r in (ws or {}).get("latest_build", {}).get("resources") or []
                for a in r.get("agents") or []
            ]
            if agents and all(
                a["status"] == "connected" and a["lifecycle_state"] == "ready" for a in agents
            ):
                assert ws is not None
                return ws
            if time.monotonic() > deadline:
                raise AssertionError(f"workspace {name} not ready: {ws}")
            time.sleep(0.2)

    def delete_quietly(self, name: str) -> None:
        if self.find(name) is not None:
            self.cli("delete", name, "--yes", check=False)

    def provider(self, **options: Any) -> CoderProvider:
        """`sandlot.coder(...)` pointed at this deployment (options may override anything)."""
        settings: dict[str, Any] = {
            "coder_binary": str(self.binary),
            "coder_url": self.url,
            "session_token": self.token,
            "ready_timeout": 120.0,
            "ssh_ready_timeout": 30.0,
        }
        settings.update(options)
        return sandlot.coder(**settings)

    def agent_pids(self) -> list[int] | None:
        """Live agent processes, where the deployment can tell (None: it cannot)."""
        return None


class FakeDeployment(Deployment):
    """The fake from sandlot.testing, with every template role."""

    def __init__(self, root: Path) -> None:
        self.fake = FakeCoderDeployment(root / "deployment")
        fake = self.fake
        fake.add_template(SINGLE, agents=[AgentSpec("main", directory="project")])
        fake.add_template(MULTI, agents=[AgentSpec("main"), AgentSpec("aux")])
        fake.add_template(PLAIN, agents=[AgentSpec("main")])
        fake.add_template(
            PARAMS,
            agents=[AgentSpec("main")],
            parameters=[ParameterSpec("region", default="eu"), ParameterSpec("size", default="s")],
            presets={"fast": {"region": "us"}},
            versions=("v1", "v2"),
        )
        binary = fake.install(root / "bin")
        super().__init__(
            binary=binary,
            url=fake.url,
            token=fake.token,
            username=fake.username,
            templates={role: role for role in (SINGLE, MULTI, PLAIN, PARAMS)},
            config_dir=fake.config_dir,
            organization="coder",
            template_versions=("v1", "v2"),
            kind="fake",
        )

    def agent_pids(self) -> list[int]:
        return self.fake.agent_pids()

    def shutdown(self) -> None:
        self.fake.shutdown()


class ArgvRecorder:
    """A `coder` shim that logs every argv, then runs the real CLI (fake or real alike)."""

    def __init__(self, real: Path, directory: Path) -> None:
        self.log = directory / "coder-argv.log"
        self.path = directory / "coder"
        self.path.write_text(
            "#!/bin/sh\n"
            f"{{ printf '%s\\037' \"$@\"; printf '\\036'; }} >> {shlex.quote(str(self.log))}\n"
            f"exec {shlex.quote(str(real))} \"$@\"\n"
        )
        self.path.chmod(0o755)

    def calls(self) -> list[list[str]]:
        if not self.log.exists():
            return []
        raw = self.log.read_text()
        return [record.split("\x1f")[:-1] for record in raw.split("\x1e") if record]

    def verbs(self) -> list[str]:
        return [call[0] for call in self.calls() if call]
