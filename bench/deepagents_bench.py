"""One read, one edit and one execute through the Deep Agents backend against the same call
on `Toolbox` / `Sandbox` directly, on a local sandbox and a fake Coder workspace, in one run.

The backend is called as the framework calls it from async code: its async variants
(`aread`, `aedit`, `aexecute`), which run the sync method in a worker thread that hands the
call to the sandbox's own loop (the provider's blocking portal). The baseline is a second
handle on the same sandbox (attached). Goal: within 1.2x + 1 ms.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sandlot.tools import Toolbox

from .adapter_backends import BACKENDS, attach
from .core import Measurement, Unavailable, interleaved


def row(group: str, backend: str, subject: str, baseline: str, s: float,
        b: float) -> Measurement:
    allowed = 1.2 * b + 0.001
    return Measurement(group, backend, subject, baseline, s, b, "s", target="<= 1.2x + 1 ms",
                       notes=f"overhead {1000 * (s - b):.2f} ms; "
                             f"{'meets' if s <= allowed else 'misses'} the goal",
                       extra={"overhead_ms": round(1000 * (s - b), 3)})


async def run(quick: bool = False) -> list[Measurement]:
    try:
        import sandlot.integrations.deepagents  # noqa: F401
    except ImportError as exc:
        raise Unavailable(f"deepagents is not installed ({exc}); pip install "
                          "'sandlot[deepagents]'") from None
    rounds = 20 if quick else 200
    rows: list[Measurement] = []
    text = "".join(f"line {i}\n" for i in range(200))
    for where, made in BACKENDS.items():
        rows += await _on(where, made, rounds, text)
    return rows


async def _on(where: str, made: Any, rounds: int, text: str) -> list[Measurement]:
    from sandlot.integrations.deepagents import SandlotProvider

    rows: list[Measurement] = []
    with made() as (config, access), \
            SandlotProvider({**config, **access}) as provider:
        backend = provider.get_or_create()
        path = f"{backend.root}/f.txt"
        assert backend.write(path, text).error is None
        async with attach(backend.sandbox, access).session() as sandbox, \
                Toolbox(sandbox) as box:
            await box.read("f.txt")  # the toolbox's edits need a prior read
            flips = {"adapter": 0, "toolbox": 0}

            async def adapter_read() -> None:
                assert (await backend.aread(path)).error is None

            async def toolbox_read() -> None:
                await box.read("f.txt")

            async def adapter_edit() -> None:
                old, new = ("line 7\n", "LINE 7\n")[:: 1 if flips["adapter"] % 2 == 0
                                                    else -1]
                flips["adapter"] += 1
                assert (await backend.aedit(path, old, new)).error is None

            async def toolbox_edit() -> None:
                old, new = ("line 9\n", "LINE 9\n")[:: 1 if flips["toolbox"] % 2 == 0
                                                    else -1]
                flips["toolbox"] += 1
                await box.edit("f.txt", old, new)

            async def adapter_execute() -> None:
                assert (await backend.aexecute("true")).exit_code == 0

            async def sandbox_exec() -> None:
                assert (await sandbox.exec("true")).exit_code == 0

            pairs: list[tuple[str, Callable[[], Awaitable[None]],
                              Callable[[], Awaitable[None]], str]] = [
                ("read", adapter_read, toolbox_read, "Toolbox.read"),
                ("edit", adapter_edit, toolbox_edit, "Toolbox.edit"),
                ("execute", adapter_execute, sandbox_exec, "Sandbox.exec"),
            ]
            n = rounds if where == "local" else max(10, rounds // 4)
            for name, subject, baseline, base_name in pairs:
                s, b = await interleaved(subject, baseline, rounds=n, warmup=5)
                rows.append(row("deepagents", where, f"Deep Agents backend a{name}",
                                base_name, s, b))
    return rows
