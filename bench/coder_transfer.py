"""The coder backend beyond single-exec latency: concurrency on one SSH connection, copy_in and
copy_out throughput against a raw `tar | ssh ... tar x` (and back) through the same
ProxyCommand, and peak memory while streaming a gibibyte of output. On the fake deployment
always, and on the real one when tests/realcoder can start it."""

from __future__ import annotations

import asyncio
import json
import shlex
import shutil
from pathlib import Path

import sandlot
from sandlot.backends.coder.sandbox import CoderSandbox
from sandlot.testing import AgentSpec, FakeCoderDeployment

from .coder_exec import openssh_argv
from .core import Measurement, Unavailable
from .measures import (
    Scratch,
    concurrency,
    copy_in_throughput,
    copy_out_throughput,
    make_big_file,
    make_small_tree,
    peak_rss,
    real_coder,
)


async def _shell(line: str, env: dict[str, str]) -> None:
    proc = await asyncio.create_subprocess_exec(
        "sh", "-c", line, env=env,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )
    _, err = await proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"baseline failed: {line[:200]}: {err.decode()[-500:]}")


async def run(quick: bool = False) -> list[Measurement]:
    if shutil.which("ssh") is None:
        raise Unavailable("OpenSSH client `ssh` not installed (apt-get install openssh-client)")
    rows: list[Measurement] = []
    with Scratch() as scratch:
        tree = make_small_tree(scratch, 1000 if quick else 10_000)
        big = make_big_file(scratch, 20 if quick else 200)
        fake = FakeCoderDeployment(scratch / "coder")
        try:
            fake.add_template("bench", agents=[AgentSpec("main", directory="project")])
            exe = fake.install(scratch / "bin")
            options = {
                "type": "coder", "template": "bench", "on_close": "delete",
                "coder_binary": str(exe), "coder_url": fake.url, "session_token": fake.token,
            }
            env = {**fake.env()}
            rows += await _measure("coder (fake)", options, exe, env, tree, big, quick)
            rows.append(await peak_rss(json.dumps(options), 0.25 if quick else 1.0))
        finally:
            fake.shutdown()
        with real_coder("coder_transfer") as found:
            if found is not None:
                coder, label = found
                options = {
                    "type": "coder", "template": coder.template_single, "on_close": "delete",
                    "coder_binary": str(coder.binary), "coder_url": coder.url,
                    "session_token": coder.session_token,
                }
                rows += await _measure(label, options, Path(coder.binary), coder.cli_env(),
                                       tree, big, quick)
    return rows


async def _measure(
    backend: str,
    options: dict[str, str],
    exe: Path,
    cli_env: dict[str, str],
    tree: Path,
    big: Path,
    quick: bool,
) -> list[Measurement]:
    import os

    env = {**os.environ, **cli_env}  # the raw ssh baseline's ProxyCommand needs them
    rows: list[Measurement] = []
    provider = sandlot.provider_from_config(dict(options))
    async with provider.session() as sandbox:
        assert isinstance(sandbox, CoderSandbox)
        target = f"{sandbox.workspace_name}.{sandbox.agent}"
        rows.append(await concurrency(backend, sandbox))

        def ssh(remote: str) -> str:
            return shlex.join(openssh_argv(exe, target, remote))

        async def raw_tar_in(src: object, dest: str) -> None:
            remote = f"mkdir -p {shlex.quote(dest)} && tar -xf - -C {shlex.quote(dest)}"
            await _shell(f"tar -C {shlex.quote(str(src))} -cf - . | {ssh(remote)}", env)

        async def raw_cat_in(src: object, dest: str) -> None:
            await _shell(f"{ssh(f'cat > {shlex.quote(dest)}')} < {shlex.quote(str(src))}", env)

        async def raw_tar_out(src: str, dest: Path) -> None:
            remote = f"tar -C {shlex.quote(src)} -cf - ."
            await _shell(f"{ssh(remote)} | tar -xf - -C {shlex.quote(str(dest))}", env)

        async def raw_cat_out(src: str, dest: Path) -> None:
            out = shlex.quote(str(dest / Path(src).name))
            await _shell(f"{ssh(f'cat {shlex.quote(src)}')} > {out}", env)

        files = f"{'1,000' if quick else '10,000'} small files"
        mib = f"{'20' if quick else '200'} MiB file"
        rows.append(await copy_in_throughput(
            backend, sandbox, tree, files, raw_tar_in, "tar | ssh tar x", target="<= 1.1x"))
        rows.append(await copy_in_throughput(
            backend, sandbox, big, mib, raw_cat_in, "ssh cat >"))
        rows.append(await copy_out_throughput(
            backend, sandbox, tree, files, raw_tar_out, "ssh tar c | tar x", target="<= 1.1x"))
        rows.append(await copy_out_throughput(
            backend, sandbox, big, mib, raw_cat_out, "ssh cat"))
    return rows
