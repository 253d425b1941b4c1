"""Per-exec latency of the coder backend, against the two strategies it is chosen over.

In one run, through the same fake Coder deployment (sandlot.testing) and the same workspace:

- sandlot.coder: `exec("true")` -- a channel on the sandbox's ONE SSH connection;
- process per command: a fresh OpenSSH `ssh -o ProxyCommand="coder ssh --stdio ..." ... true`
  for every command (what a CLI-per-exec backend costs: ssh + coder + a new SSH handshake);
- a local subprocess: `sh -c true` on this host (the floor: no network, no SSH at all).

Targets (issue 3): >= 30x faster than process-per-command, within 3x of a local subprocess.
Each pair is timed interleaved (bench.core.interleaved) so machine drift hits both sides.

    python -m bench --only coder        # as part of the bench, or on its own:
    python -m bench.coder_exec [--quick]
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from pathlib import Path

import sandlot
from sandlot.backends.coder.sandbox import CoderSandbox
from sandlot.backends.coder.ssh import ProxyCommand, SSHConnection, SSHOptions
from sandlot.testing import AgentSpec, FakeCoderDeployment

from . import file_tools_bench
from .core import Measurement, Unavailable, format_table, interleaved
from .measures import Scratch, parallel_floor, raw_subprocess, real_coder

TARGET_VS_PROCESS = 1 / 30
TARGET_VS_LOCAL = 3.0


def openssh_argv(exe: Path, target: str, command: str) -> list[str]:
    """A fresh OpenSSH client through `coder ssh --stdio`, touching no user SSH config."""
    return [
        "ssh",
        "-F", "/dev/null",  # no ~/.ssh/config
        "-o", f"ProxyCommand={exe} ssh --stdio %h",
        "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null",
        "-o", "GlobalKnownHostsFile=/dev/null",
        "-o", "BatchMode=yes",
        "-o", "LogLevel=ERROR",
        "-o", "IdentitiesOnly=yes",
        "-o", "IdentityFile=/dev/null",
        "-T",
        f"coder@{target}",
        command,
    ]  # fmt: skip


async def run(quick: bool = False) -> list[Measurement]:
    if shutil.which("ssh") is None:
        raise Unavailable("OpenSSH client `ssh` not installed (apt-get install openssh-client)")
    rounds = 10 if quick else 40
    rows: list[Measurement] = []
    with Scratch() as scratch:
        fake = FakeCoderDeployment(scratch / "coder")
        try:
            fake.add_template("bench", agents=[AgentSpec("main", directory="project")])
            exe = fake.install(scratch / "bin")
            provider = sandlot.coder(
                template="bench", on_close="delete", coder_binary=str(exe),
                coder_url=fake.url, session_token=fake.token,
            )
            env = {**os.environ, **fake.env()}
            rows += await _measure("coder (fake)", provider, exe, env, rounds)
        finally:
            fake.shutdown()
    rows += await _real(rounds)
    return rows


async def _real(rounds: int) -> list[Measurement]:
    """The same measurements on a real Coder deployment, when tests/realcoder can start one
    (the release from scripts/build-coder.sh is cached and PostgreSQL is installed)."""
    with real_coder("coder") as found:
        if found is None:
            return []
        coder, label = found
        provider = sandlot.coder(
            template=coder.template_single, on_close="delete", **coder.access()
        )
        return await _measure(label, provider, Path(coder.binary), coder.cli_env(), rounds,
                              file_tools=True)


async def _measure(
    backend: str,
    provider: sandlot.IsolatedSandboxProvider,
    exe: Path,
    env: dict[str, str],
    rounds: int,
    *,
    file_tools: bool = False,
) -> list[Measurement]:
    """`file_tools`: also the file tool rows (the fake Coder has them in fake_coder_bench)."""
    rows: list[Measurement] = []
    async with provider.session() as sandbox:
        assert isinstance(sandbox, CoderSandbox)
        target = f"{sandbox.workspace_name}.{sandbox.agent}"

        async def coder_exec() -> None:
            await sandbox.exec("true", check=True)

        async def process_per_command() -> None:
            proc = await asyncio.create_subprocess_exec(
                *openssh_argv(exe, target, "true"), env=env,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
            _, err = await proc.communicate()
            if proc.returncode != 0:
                raise RuntimeError(f"ssh per command failed: {err.decode()[-500:]}")

        async def local_subprocess() -> None:
            await raw_subprocess("sh", "-c", "true")

        rows += await _floor(backend, sandbox, exe, env, target, rounds)

        s, b = await interleaved(coder_exec, process_per_command, rounds=max(5, rounds // 4))
        rows.append(Measurement(
            "coder exec", backend, "exec('true'), one connection",
            "ssh + ProxyCommand per command", s, b, "s",
            target=f"<= {TARGET_VS_PROCESS:.3f}x (>= 30x faster)",
            notes=f"{b / s:.0f}x faster",
        ))
        s, b = await interleaved(coder_exec, local_subprocess, rounds=rounds)
        rows.append(Measurement(
            "coder exec", backend, "exec('true'), one connection",
            "local subprocess sh -c true", s, b, "s",
            target=f"<= {TARGET_VS_LOCAL:g}x",
        ))
        async with sandlot.local().session() as local:

            async def local_exec() -> None:
                await local.exec("true", check=True)

            s, b = await interleaved(coder_exec, local_exec, rounds=rounds)
        rows.append(Measurement(
            "coder exec", backend, "exec('true'), one connection",
            "sandlot.local exec('true')", s, b, "s",
            notes="same sandlot code path above the backend",
        ))
        if file_tools:
            rows += await file_tools_bench.run_on(backend, sandbox, quick=rounds <= 10)
    return rows


async def _floor(
    backend: str, sandbox: CoderSandbox, exe: Path, env: dict[str, str], target: str,
    rounds: int,
) -> list[Measurement]:
    """The true floor of the design: a bare asyncssh channel (`conn.run("true")`) on a second
    connection through the same `coder ssh --stdio` proxy, one and 32 in parallel."""
    bare = SSHConnection(
        ProxyCommand([str(exe), "ssh", "--stdio", "--disable-autostart", target], env=env,
                     label=target),
        SSHOptions(username="coder"),
    )
    conn = await bare.ensure()
    try:
        async def bare_channel() -> None:
            await conn.run("true", check=True)

        async def coder_exec() -> None:
            await sandbox.exec("true", check=True)

        s, b = await interleaved(coder_exec, bare_channel, rounds=rounds)
        rows = [Measurement(
            "exec floor", backend, "exec('true')", "bare asyncssh channel, same proxy", s, b,
            "s", target="<= 1.1x",
        )]

        # `true` is a shell builtin: the bare channel's shell runs it without a process of its
        # own, which no wrapper that must report a signal death can match. A program shows
        # what an everyday command costs over the same floor.
        async def bare_program() -> None:
            await conn.run("/bin/true", check=True)

        async def coder_program() -> None:
            await sandbox.exec(["/bin/true"], check=True)

        s, b = await interleaved(coder_program, bare_program, rounds=rounds)
        rows.append(Measurement(
            "exec floor", backend, "exec(['/bin/true'])", "bare asyncssh channel, same proxy",
            s, b, "s", target="<= 1.1x",
        ))
        rows.append(await parallel_floor(
            backend, sandbox, bare_channel, "bare asyncssh channels", rounds=max(3, rounds // 8)
        ))
        # Like for like: a program on both sides (the builtin row above runs no process at all
        # on the bare side, where sandlot's Coder wrapper must fork to report a signal death).
        rows.append(await parallel_floor(
            backend, sandbox, bare_program, "bare asyncssh channels running /bin/true",
            rounds=max(3, rounds // 8), command=["/bin/true"],
        ))
        return rows
    finally:
        await bare.close()


def main() -> int:
    quick = "--quick" in sys.argv[1:]
    started = time.time()
    rows = asyncio.run(run(quick))
    print(format_table(rows))
    out = Path(__file__).parent / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / ("coder_exec.quick.json" if quick else "coder_exec.json")
    path.write_text(json.dumps({
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "quick": quick,
        "load_avg": os.getloadavg(),
        "measurements": [r.as_dict() for r in rows],
    }, indent=2) + "\n")
    print(f"wrote {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
