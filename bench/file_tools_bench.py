"""The agent file tools against the floor of one exec round trip on the same sandbox.

Rows per backend: read of a 200-line file, edit, grep in a 40-file tree and glob, each with
the session helper (one long-lived python3 in the sandbox, adr/0042) and without it (one
command per call), against `exec(["cat", f])` -- the cheapest thing a tool call could cost.
One more row: the helper's peak RSS (VmHWM) in the sandbox, against its 30 MiB goal.
"""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import sandlot
from sandlot import Sandbox
from sandlot._engine import engine_of
from sandlot._session.client import session_for
from sandlot.tools import Toolbox

from .core import Measurement, Unavailable, interleaved
from .measures import real_coder

SETUP = (
    "mkdir -p tree && for i in $(seq 1 40); do "
    "printf 'line one\\nneedle %s\\nline three\\n' $i > tree/f$i.txt; done; "
    "seq 1 200 | sed 's/^/row /' > small.txt"
)
RSS_GOAL_MIB = 30.0


async def run_on(backend: str, sandbox: Sandbox, *, quick: bool,
                 env: dict[str, str] | None = None) -> list[Measurement]:
    root = f"{sandbox.worktree}/bench-file-tools"
    await sandbox.exec(["mkdir", "-p", root], check=True)
    await sandbox.exec(["sh", "-c", SETUP], cwd=root, check=True)
    small = f"{root}/small.txt"
    rounds = 10 if quick else 30

    async def floor() -> None:
        await sandbox.exec(["cat", small], check=True)

    rows: list[Measurement] = []
    was = sandbox._session_helper
    box_env = dict(env or {})
    try:
        for helper in (True, False):
            sandbox._session_helper = helper
            box = Toolbox(sandbox, {"bench": root}, env=box_env)
            await box.read("small.txt")
            flips = itertools.count()

            async def edit(box: Toolbox = box, flips: Any = flips) -> None:
                old, new = ("row 7\n", "row 7 x\n") if next(flips) % 2 == 0 else (
                    "row 7 x\n", "row 7\n")
                await box.edit("small.txt", old, new)

            ops: dict[str, Callable[[], Awaitable[object]]] = {
                "read 200-line file": lambda box=box: box.read("small.txt"),  # type: ignore[misc]
                "edit": edit,
                "grep, 40-file tree": lambda box=box: box.grep("needle", path="tree"),  # type: ignore[misc]
                "glob": lambda box=box: box.glob("tree/*.txt"),  # type: ignore[misc]
            }
            if helper:
                # The helper's previous grep route, side by side: rg started per call (the
                # knob the tests use to run every grep test on both routes).
                rg_box = Toolbox(sandbox, {"bench": root},
                                 env={**box_env, "SANDLOT_GREP_PROCESS": "1"})
                ops["grep, 40-file tree, rg per call"] = (
                    lambda rg_box=rg_box: rg_box.grep("needle", path="tree"))  # type: ignore[misc]
            how = "session helper" if helper else "one command per call"
            for name, op in ops.items():
                s, b = await interleaved(op, floor, rounds=rounds)
                rows.append(Measurement(
                    "file tools", backend, f"{name} ({how})", 'exec(["cat", f])', s, b, "s",
                    target="<= 1.5x" if helper and "rg per call" not in name else "",
                ))
        sandbox._session_helper = True
        session = session_for(engine_of(sandbox), box_env)
        pid = int(session.hello["pid"])
        status = await sandbox.exec(["cat", f"/proc/{pid}/status"], check=True)
        hwm = next(line.split()[1] for line in status.stdout.splitlines()
                   if line.startswith("VmHWM:"))
        rows.append(Measurement(
            "file tools", backend, "session helper peak RSS (VmHWM)", "goal", int(hwm) / 1024,
            RSS_GOAL_MIB, "MiB", target="<= 1x",
            notes=f"python {'.'.join(map(str, session.hello.get('python', [])))}, "
                  "after every measurement above",
        ))
        await session.aclose()
        await session_for(engine_of(sandbox), {**box_env, "SANDLOT_GREP_PROCESS": "1"}).aclose()
    finally:
        sandbox._session_helper = was
    return rows


async def run(quick: bool = False) -> list[Measurement]:
    """These rows alone (`python -m bench --only file_tools`): local, the fake Coder, Docker
    (the toolchain image, which has python3) and a real Coder where they run here."""
    from . import docker_bench
    from .fake_coder_bench import tools_sandbox

    rows: list[Measurement] = []
    async with sandlot.local().session() as sandbox:
        rows += await run_on("local", sandbox, quick=quick)
    async with tools_sandbox() as sandbox:
        rows += await run_on("fake-coder", sandbox, quick=quick)
    try:
        engine = docker_bench._engine()
    except Unavailable:
        return rows  # no engine here: the other rows still stand
    try:
        async with docker_bench.python_provider(engine, helper=True).session() as box:
            rows += await run_on("docker", box, quick=quick)
    finally:
        engine.stop()
    with real_coder("coder") as found:  # a real deployment, where tests/realcoder can start one
        if found is not None:
            coder, label = found
            provider = sandlot.coder(template=coder.template_single, on_close="delete",
                                     **coder.access())
            async with provider.session() as sandbox:
                rows += await run_on(label, sandbox, quick=quick)
    return rows
