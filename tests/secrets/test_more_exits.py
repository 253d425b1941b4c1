"""More ways a secret reaches a sandbox, and more exits it must not leave by: a Toolbox's own
`env`, the Deep Agents backend (provider env), durable processes, `sandlot serve --secret`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sandlot
from sandlot import Secret
from sandlot.tools import Toolbox

REPO = Path(__file__).resolve().parents[2]
VALUE = "more-exits_5e6f7a8b9c0d+/x"
MARK = "[secret:TOK]"


@pytest.mark.anyio
async def test_a_toolbox_env_secret_is_scrubbed_from_every_tool() -> None:
    async with sandlot.local().session() as sandbox:
        box = Toolbox(sandbox, env={"TOK": Secret(VALUE)})
        ran = await box.bash('echo "$TOK" > f.txt; cat f.txt; echo "$TOK" | base64')
        read = await box.read("f.txt")
        found = await box.grep("more-exits")
        for result in (ran, read, found):
            dumped = result.model_dump_json()
            assert VALUE not in dumped and MARK in dumped, dumped
        # Durable processes take secrets too; their own API hands back raw bytes.
        process = await sandbox.processes.start('printf %s "$T2"', env={"T2": Secret("d-9x8y7z")})
        chunk = await process.read(0)
        for _ in range(100):
            if chunk.complete:
                break
            chunk = await process.read(0)
        assert b"d-9x8y7z" in chunk.data
        assert "d-9x8y7z" not in (await box.bash('printf %s "$T2"; echo d-9x8y7z')).text


def test_the_deep_agents_backend_hands_no_secret_to_the_model() -> None:
    pytest.importorskip("deepagents")
    from sandlot.integrations.deepagents import SandlotProvider

    config = {"type": "local", "on_close": "delete", "env": {"TOK": Secret(VALUE)}}
    with SandlotProvider(config) as provider:
        backend = provider.get_or_create()
        ran = backend.execute('echo "$TOK"; echo "$TOK" > f.txt; echo "$TOK" | base64 >&2')
        read = backend.read(f"{backend.root}/f.txt")
        grep = backend.grep("more", path=backend.root)
        for result in (ran, read, grep):
            assert VALUE not in repr(result) and MARK in repr(result), repr(result)


def test_serve_refuses_a_missing_secret_before_a_sandbox() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    done = subprocess.run([sys.executable, "-m", "sandlot", "serve", "--secret",
                           "TOK=NOT_SET_FOR_SERVE"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode != 0 and "NOT_SET_FOR_SERVE is not set" in done.stderr
    assert "creating" not in done.stderr
