"""Driving the fake `coder` exactly as a backend does: subprocesses and real SSH."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncssh

from sandlot.testing import FakeCoderDeployment


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str


@dataclass
class Coder:
    """A deployment plus its installed executable and environment."""

    deployment: FakeCoderDeployment
    exe: Path
    env: dict[str, str]

    def run(
        self,
        *args: str,
        input: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> Result:
        proc = subprocess.run(
            [str(self.exe), *args],
            input=input if input is not None else "",
            capture_output=True,
            text=True,
            env=env if env is not None else self.env,
            timeout=timeout,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    def ok(self, *args: str, input: str | None = None) -> Result:
        result = self.run(*args, input=input)
        assert result.code == 0, f"coder {' '.join(args)} failed: {result.stderr}"
        return result

    def list_json(self, *extra: str) -> list[dict[str, Any]]:
        out = self.ok("list", "-o", "json", *extra).stdout
        return json.loads(out) if out.strip() else []

    def create(self, name: str, *extra: str, template: str = "docker") -> Result:
        return self.ok("create", name, "-t", template, "--yes", *extra)

    def agents(self, name: str) -> list[dict[str, Any]]:
        for ws in self.list_json("-a"):
            if ws["name"] == name:
                return [a for r in ws["latest_build"]["resources"] for a in r.get("agents", [])]
        raise AssertionError(f"no workspace {name}")

    def wait_ready(self, name: str, timeout: float = 60) -> list[dict[str, Any]]:
        """Poll `coder list` like the backend does until every agent is connected and ready."""
        deadline = time.monotonic() + timeout
        while True:
            agents = self.agents(name)
            if agents and all(
                a["status"] == "connected" and a["lifecycle_state"] == "ready" for a in agents
            ):
                return agents
            assert time.monotonic() < deadline, f"agents of {name} never became ready: {agents}"
            time.sleep(0.1)

    def proxy_command(self, target: str) -> list[str]:
        return [str(self.exe), "ssh", "--stdio", target]

    @contextlib.asynccontextmanager
    async def connect(self, target: str) -> AsyncIterator[asyncssh.SSHClientConnection]:
        """asyncssh over `coder ssh --stdio <target>`, with this deployment's environment.

        The proxy process gets one end of a socket pair as stdin and stdout (what OpenSSH's
        ProxyCommand does with pipes), so the token travels in its environment, never in argv.
        """
        ours, theirs = socket.socketpair()
        proxy = await asyncio.create_subprocess_exec(
            *self.proxy_command(target), stdin=theirs, stdout=theirs, env=self.env
        )
        theirs.close()
        try:
            async with asyncssh.connect(
                sock=ours, known_hosts=None, username="coder", host="fake-coder"
            ) as conn:
                yield conn
        finally:
            try:
                await asyncio.wait_for(proxy.wait(), 10)
            except TimeoutError:
                proxy.kill()
                await proxy.wait()


def make_coder(root: Path, bin_dir: Path, username: str = "testuser") -> Coder:
    deployment = FakeCoderDeployment(root, username=username)
    exe = deployment.install(bin_dir)
    env = {**os.environ, **deployment.env()}
    return Coder(deployment, exe, env)


def pid_gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rfind(")") + 2] in "ZX"


def key_order(obj: dict[str, Any]) -> list[str]:
    return list(obj.keys())


def without(keys: Sequence[str], *removed: str) -> list[str]:
    return [k for k in keys if k not in removed]
