"""The coder backend beyond single-exec latency, through the fake deployment: concurrency on
one SSH connection, copy_in throughput against a raw `tar | ssh ... tar x` through the same
ProxyCommand, and peak memory while streaming a gibibyte of output."""

from __future__ import annotations

import json
import os
import shlex
import shutil

import sandlot
from sandlot.backends.coder.sandbox import CoderSandbox
from sandlot.testing import AgentSpec, FakeCoderDeployment

from .coder_exec import openssh_argv
from .core import Measurement, Unavailable
from .measures import (
    Scratch,
    concurrency,
    copy_in_throughput,
    make_big_file,
    make_small_tree,
    peak_rss,
    raw_subprocess,
)


async def run(quick: bool = False) -> list[Measurement]:
    if shutil.which("ssh") is None:
        raise Unavailable("OpenSSH client `ssh` not installed (apt-get install openssh-client)")
    rows: list[Measurement] = []
    with Scratch() as scratch:
        fake = FakeCoderDeployment(scratch / "coder")
        try:
            fake.add_template("bench", agents=[AgentSpec("main", directory="project")])
            exe = fake.install(scratch / "bin")
            options = {
                "type": "coder", "template": "bench", "on_close": "delete",
                "coder_binary": str(exe), "coder_url": fake.url, "session_token": fake.token,
            }
            provider = sandlot.provider_from_config(dict(options))
            os.environ.update(fake.env())  # the raw ssh baseline's ProxyCommand needs them
            async with provider.session() as sandbox:
                assert isinstance(sandbox, CoderSandbox)
                target = f"{sandbox.workspace_name}.{sandbox.agent}"
                rows.append(await concurrency("coder (fake)", sandbox))
                tree = make_small_tree(scratch, 1000 if quick else 10_000)
                big = make_big_file(scratch, 20 if quick else 200)

                async def raw_tar_ssh(src: object, dest: str) -> None:
                    remote = f"mkdir -p {shlex.quote(dest)} && tar -xf - -C {shlex.quote(dest)}"
                    ssh = shlex.join(openssh_argv(exe, target, remote))
                    pack = f"tar -C {shlex.quote(str(src))} -cf - ."
                    await raw_subprocess("sh", "-c", f"{pack} | {ssh}")

                async def raw_cat_ssh(src: object, dest: str) -> None:
                    remote = f"cat > {shlex.quote(dest)}"
                    ssh = shlex.join(openssh_argv(exe, target, remote))
                    await raw_subprocess("sh", "-c", f"{ssh} < {shlex.quote(str(src))}")

                label = "1,000" if quick else "10,000"
                rows.append(await copy_in_throughput(
                    "coder (fake)", sandbox, tree, f"{label} small files", raw_tar_ssh,
                    "tar | ssh tar x"))
                rows.append(await copy_in_throughput(
                    "coder (fake)", sandbox, big, f"{'20' if quick else '200'} MiB file",
                    raw_cat_ssh, "ssh cat >"))
            rows.append(await peak_rss(json.dumps(options), 0.25 if quick else 1.0))
        finally:
            fake.shutdown()
    return rows
