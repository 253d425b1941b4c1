"""Workspaces the shipped template makes (providers/coder through Terraform), beside the echo path.

On the template tier of tests/template (the real `coder server` with its Terraform provisioner,
the private Docker engine, the Debian-built workspace image):

- create-to-first-command: `provider.create()` until a first `exec` returned, for a
  template-provisioned workspace with a cold image (not on the engine: `docker import` of the
  cached root file system first) and a warm one, against the echo-template path of
  tests/realcoder (a local agent process, no Terraform, no container);
- exec, copy and forward rows on a provisioned workspace, against the same floors as the other
  Coder rows (bench.coder_exec, bench.coder_transfer, bench.forward_bench).

Prebuilt presets are not measured: prebuilds need a Premium license on these releases.

    python -m bench --only template [--quick]
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path
from typing import Any

import sandlot

from .core import Measurement, Unavailable
from .measures import Scratch, make_big_file, make_small_tree, real_coder


async def _create_to_first_command(provider: sandlot.IsolatedSandboxProvider) -> float:
    began = time.monotonic()
    sandbox = await provider.create()
    try:
        await sandbox.exec("true", check=True)
        return time.monotonic() - began
    finally:
        await sandbox.close()


def _template_deployment() -> tuple[Any, Any, Path]:
    """The private engine and a started TemplateCoder, or Unavailable saying what is missing."""
    try:
        from tests import docker_engine
        from tests.template.harness import TemplateCoder, cached_rootfs, missing_parts
    except ImportError as exc:
        raise Unavailable(f"tests/template not importable: {exc}") from exc
    missing = missing_parts() + docker_engine.missing_components()
    rootfs = cached_rootfs()
    if rootfs is None:
        missing.append("the workspace image (scripts/build-workspace-image.sh)")
    if missing:
        raise Unavailable(f"template tier parts missing: {', '.join(missing)}")
    assert rootfs is not None
    engine = docker_engine.DockerEngine().start()
    return engine, TemplateCoder, rootfs


async def run(quick: bool = False) -> list[Measurement]:
    from tests.template.harness import import_image

    rounds = 1 if quick else 3
    engine, template_coder, rootfs = _template_deployment()
    rows: list[Measurement] = []
    try:
        # Cold: the image is not on the engine; the import is part of the first workspace.
        tag = f"sandlot-workspace:debian-{rootfs.parent.name}"
        engine.docker("image", "rm", "-f", tag, check=False, timeout=300)
        image, import_s = await asyncio.to_thread(import_image, engine, rootfs)
        coder = template_coder(engine, image)
        await asyncio.to_thread(coder.start)
        try:
            # The preset sets CPUs and memory; the template's other parameters are given, as
            # `coder create` asks for every parameter without a value (no terminal here).
            options: dict[str, Any] = {
                "template": coder.template, "preset": "small", "on_close": "delete",
                "parameters": {"extra_packages": "", "ci_mode": False}, **coder.access(),
            }  # fmt: skip
            cold_create = await _create_to_first_command(sandlot.coder(**options))
            cold = import_s + cold_create
            warm = min([await _create_to_first_command(sandlot.coder(**options))
                        for _ in range(rounds)])  # fmt: skip
            echo = await _echo_create(rounds)
            rows.append(Measurement(
                "create", "coder (template)", "create to first command, cold image",
                "same, warm image", cold, warm, "s",
                notes=f"docker import {import_s:.0f} s + create {cold_create:.0f} s",
            ))  # fmt: skip
            if echo is not None:
                rows.append(Measurement(
                    "create", "coder (template)", "create to first command, warm image",
                    "echo template, local agent", warm, echo, "s",
                    notes="Terraform apply + container start + agent download vs none",
                ))  # fmt: skip
            rows += await _on_workspace(coder, options, quick)
        finally:
            await asyncio.to_thread(coder.stop)
    finally:
        engine.stop()
    return rows


async def _echo_create(rounds: int) -> float | None:
    with real_coder("template") as found:
        if found is None:
            return None
        coder, _label = found
        provider = sandlot.coder(template=coder.template_single, on_close="delete",
                                 **coder.access())  # fmt: skip
        return min([await _create_to_first_command(provider) for _ in range(rounds)])


async def _on_workspace(coder: Any, options: dict[str, Any], quick: bool) -> list[Measurement]:
    """exec, copy and forward rows on one provisioned workspace (same floors as the others)."""
    from . import coder_exec, coder_transfer, forward_bench

    label = "coder (template)"
    exe = Path(coder.binary)
    rows = await coder_exec._measure(label, sandlot.coder(**options), exe, coder.cli_env(),
                                     10 if quick else 40)  # fmt: skip
    with Scratch() as scratch:
        tree = make_small_tree(scratch, 1000 if quick else 10_000)
        big = make_big_file(scratch, 20 if quick else 200)
        config = {"type": "coder", **options,
                  "session_token": coder.session_token}  # fmt: skip
        rows += await coder_transfer._measure(label, config, exe, coder.cli_env(), tree, big,
                                              quick)  # fmt: skip
        size = (20 if quick else 200) << 20
        site = scratch / "site"
        site.mkdir()
        (site / "small.txt").write_text("small")
        (site / "big.bin").write_bytes(random.randbytes(size))
        async with forward_bench._host_server(site) as port:
            direct = f"http://127.0.0.1:{port}"
            provider = sandlot.coder(**options)
            async with provider.session() as box, box.forward_port(port) as address:
                rows += await forward_bench._pair(label, direct, address.url, size,
                                                  3 if quick else 5)  # fmt: skip
    return rows
