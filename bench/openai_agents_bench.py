"""One read, one edit and one execute through the OpenAI Agents SDK session against the same
call on `Toolbox` / `Sandbox` directly, on a local sandbox and a fake Coder workspace.

The adapter (`SandlotSandboxSession`) is called as the SDK's tools call it: `read`,
`apply_patch` (one update_file operation: what the model's edit is) and `exec` (a command
string). The baseline runs on the session's own sandbox. Goal: within 1.2x + 1 ms. One more
row shows what the SDK's own instrumented wrapper (`SandboxSession`, events and tracing, the
same for every provider) adds to an exec on top.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from sandlot.tools import Toolbox

from .adapter_backends import BACKENDS
from .core import Measurement, Unavailable, interleaved
from .deepagents_bench import row


async def run(quick: bool = False) -> list[Measurement]:
    try:
        import sandlot.integrations.openai_agents  # noqa: F401
    except ImportError as exc:
        raise Unavailable(f"openai-agents is not installed ({exc}); pip install "
                          "'sandlot[openai-agents]'") from None
    rounds = 20 if quick else 200
    rows: list[Measurement] = []
    text = "".join(f"line {i}\n" for i in range(200))
    for where, made in BACKENDS.items():
        rows += await _on(where, made, rounds, text)
    return rows


async def _on(where: str, made: Any, rounds: int, text: str) -> list[Measurement]:
    from sandlot.integrations.openai_agents import (
        SandlotSandboxClient,
        SandlotSandboxClientOptions,
        SandlotSandboxSession,
    )

    rows: list[Measurement] = []
    with made() as (config, access):
        client = SandlotSandboxClient(session_token=access.get("session_token"))
        # The deployment's address goes in the configuration; its token to the client.
        where_to = {k: v for k, v in access.items() if k != "session_token"}
        options = SandlotSandboxClientOptions(provider={**config, **where_to})
        session = await client.create(options=options)
        inner = session._inner
        assert isinstance(inner, SandlotSandboxSession)
        try:
            await session.start()
            import io

            await session.write(Path("f.txt"), io.BytesIO(text.encode()))
            sandbox = inner.sandbox
            async with Toolbox(sandbox) as box:
                await box.read("f.txt")
                flips = {"adapter": 0, "toolbox": 0}

                async def adapter_read() -> None:
                    (await inner.read(Path("f.txt"))).read()

                async def toolbox_read() -> None:
                    await box.read("f.txt")

                async def adapter_edit() -> None:
                    old, new = ("line 7", "LINE 7")[:: 1 if flips["adapter"] % 2 == 0
                                                  else -1]
                    flips["adapter"] += 1
                    await inner.apply_patch({"type": "update_file", "path": "f.txt",
                                               "diff": f"@@\n-{old}\n+{new}\n"})

                async def toolbox_edit() -> None:
                    old, new = ("line 9\n", "LINE 9\n")[:: 1 if flips["toolbox"] % 2 == 0
                                                        else -1]
                    flips["toolbox"] += 1
                    await box.edit("f.txt", old, new)

                async def adapter_execute() -> None:
                    assert (await inner.exec("true")).exit_code == 0

                async def wrapped_execute() -> None:
                    assert (await session.exec("true")).exit_code == 0

                async def sandbox_exec() -> None:
                    assert (await sandbox.exec("true")).exit_code == 0

                pairs: list[tuple[str, Callable[[], Awaitable[None]],
                                  Callable[[], Awaitable[None]], str]] = [
                    ("read", adapter_read, toolbox_read, "Toolbox.read"),
                    ("apply_patch", adapter_edit, toolbox_edit, "Toolbox.edit"),
                    ("exec", adapter_execute, sandbox_exec, "Sandbox.exec"),
                    ("exec via the SDK's SandboxSession", wrapped_execute, sandbox_exec,
                     "Sandbox.exec"),
                ]
                n = rounds if where == "local" else max(10, rounds // 4)
                for name, subject, baseline, base_name in pairs:
                    s, b = await interleaved(subject, baseline, rounds=n, warmup=5)
                    rows.append(row("openai-agents", where, f"OpenAI session {name}",
                                    base_name, s, b))
        finally:
            await client.delete(session)
    return rows
