"""The navigation calls' file reads: served by the session helper's `read_many`, they give the
same bytes as the READ_MANY script they replace, the same refusals (a symlink below the root,
a path outside it, something not a regular file) and the same cap."""

from __future__ import annotations

import os

import pytest

import sandlot
from sandlot._engine import engine_of
from sandlot._session.client import session_for
from sandlot.lsp import files
from sandlot.tools.runner import run_script

pytestmark = pytest.mark.anyio

TREE = r"""
mkdir -p src/deep outside && printf 'fn a() {}\n' > src/a.rs && printf '\xff\xfe bytes\n' > src/b.rs
printf 'new\nline\n' > "src/odd
name.rs" && printf 'secret\n' > outside/s.rs && ln -s ../outside src/link
ln -s ../outside/s.rs src/file-link.rs && mkfifo src/pipe.rs && : > src/empty.rs
"""


async def _both(sandbox: sandlot.Sandbox, root: str, paths: list[str], cap: int
                ) -> tuple[bytes, bytes]:
    script = await run_script(sandbox, files.READ_MANY, [root, str(cap), *paths],
                              name="lsp-read", timeout=60, limit=files.TOTAL_CAP)
    got = bytearray()

    async def on_data(channel: int, data: bytes) -> None:
        got.extend(data)

    session = session_for(engine_of(sandbox), {})
    result = await session.run("read_many", {"root": root, "cap": cap, "paths": paths},
                               on_data=on_data, timeout=60)
    assert result is not None and result["code"] == script.exit_code == 0
    return bytes(got), script.stdout


async def test_the_helper_reads_what_the_script_reads() -> None:
    async with sandlot.local().session() as sandbox:
        root = sandbox.worktree
        await sandbox.exec(["sh", "-c", TREE], cwd=root, check=True)
        paths = [f"{root}/{name}" for name in (
            "src/a.rs", "src/b.rs", "src/odd\nname.rs", "src/link/s.rs", "src/file-link.rs",
            "src/pipe.rs", "src/empty.rs", "src/missing.rs", "outside/s.rs", "src/deep")]
        paths.append(f"{root}/../{os.path.basename(root)}/src/a.rs")
        for cap in (files.TOTAL_CAP, 12):  # the cap: a.rs (10 bytes) fits, b.rs does not
            helper, script = await _both(sandbox, root, paths, cap)
            assert helper == script
        texts = await files.read_many(sandbox, root, paths)
        assert texts[f"{root}/src/a.rs"] == "fn a() {}\n"
        assert texts[f"{root}/src/odd\nname.rs"] == "new\nline\n"
        refused = ("src/link/s.rs", "src/file-link.rs", "src/pipe.rs", "src/missing.rs",
                   "src/deep")
        assert all(texts[f"{root}/{name}"] is None for name in refused)
        assert session_for(engine_of(sandbox), {}).starts == 1  # served, not fallen back
