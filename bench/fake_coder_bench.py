"""The fake Coder deployment (sandlot.testing): what one `coder` call and one SSH exec cost.

The fake runs hundreds of times per test session, so its CLI must stay close to a bare Python
start-up, and an exec over its SSH agent close to a local subprocess.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import sandlot
from sandlot.testing import AgentSpec, FakeCoderDeployment

from . import file_tools_bench
from .core import Measurement, interleaved
from .measures import Scratch, raw_subprocess


async def _coder(exe: Path, env: dict[str, str], *args: str) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(exe), *args, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )
    if await proc.wait() != 0:
        raise RuntimeError(f"fake coder {' '.join(args)} failed")


async def _wait_connected(exe: Path, env: dict[str, str], name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        proc = await asyncio.create_subprocess_exec(
            str(exe), "list", "-o", "json", env=env, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        out, _ = await proc.communicate()
        if b'"lifecycle_state": "ready"' in out:
            return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"fake agent of {name} never became ready")


async def run(quick: bool = False) -> list[Measurement]:
    import asyncssh

    rounds = 10 if quick else 30
    rows: list[Measurement] = []
    with Scratch() as scratch:
        deployment = FakeCoderDeployment(scratch / "coder")
        try:
            deployment.add_template("docker")
            exe = deployment.install(scratch / "bin")
            env = {**os.environ, **deployment.env()}
            python = [sys.executable, "-sS", "-c", "pass"]

            async def bare() -> None:
                await raw_subprocess(*python)

            for args in (("whoami", "-o", "json"), ("list", "-o", "json")):
                async def call(args: tuple[str, ...] = args) -> None:
                    await _coder(exe, env, *args)

                subject, baseline = await interleaved(call, bare, rounds=rounds)
                rows.append(Measurement(
                    "fake coder", "fake-coder", f"coder {' '.join(args)}",
                    "python -sS -c pass", subject, baseline, "s",
                    notes="CLI start-up + state read, over a bare interpreter start",
                ))

            await _coder(exe, env, "create", "bench", "-t", "docker", "--yes")
            await _wait_connected(exe, env, "bench")
            ours, theirs = socket.socketpair()
            proxy = await asyncio.create_subprocess_exec(
                str(exe), "ssh", "--stdio", "bench", stdin=theirs.fileno(),
                stdout=theirs.fileno(), env=env,
            )
            theirs.close()
            try:
                async with asyncssh.connect(
                    sock=ours, host="fake-coder", known_hosts=None, username="coder"
                ) as conn:

                    async def ssh_exec() -> None:
                        await conn.run("true", check=True)

                    async def local_exec() -> None:
                        await raw_subprocess("sh", "-c", "true")

                    subject, baseline = await interleaved(ssh_exec, local_exec, rounds=rounds * 2)
                    rows.append(Measurement(
                        "fake coder", "fake-coder", "exec 'true' on one SSH connection",
                        "subprocess sh -c true", subject, baseline, "s",
                        notes="channel per exec through `coder ssh --stdio` to the fake agent",
                    ))
            finally:
                if proxy.returncode is None:
                    proxy.kill()
                await proxy.wait()
            async with _tools_sandbox(deployment, exe) as sandbox:
                rows += await file_tools_bench.run_on("fake-coder", sandbox, quick=quick)
        finally:
            deployment.shutdown()
    return rows


@contextlib.asynccontextmanager
async def _tools_sandbox(deployment: FakeCoderDeployment,
                         exe: Path) -> AsyncIterator[sandlot.Sandbox]:
    deployment.add_template("bench-tools", agents=[AgentSpec("main", directory="p")])
    provider = sandlot.coder(template="bench-tools", on_close="delete",
                             coder_binary=str(exe), coder_url=deployment.url,
                             session_token=deployment.token)
    async with provider.session() as sandbox:
        yield sandbox


@contextlib.asynccontextmanager
async def tools_sandbox() -> AsyncIterator[sandlot.Sandbox]:
    """A workspace of a fresh fake Coder deployment, for the file tool rows alone."""
    with Scratch() as scratch:
        deployment = FakeCoderDeployment(scratch / "coder")
        try:
            exe = deployment.install(scratch / "bin")
            async with _tools_sandbox(deployment, exe) as sandbox:
                yield sandbox
        finally:
            deployment.shutdown()
