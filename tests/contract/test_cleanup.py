"""Closing removes any tree a sandbox can make: very deep, unreadable, oddly named."""

from __future__ import annotations

import os

import pytest

from sandlot import IsolatedSandboxProvider

pytestmark = pytest.mark.anyio

# 1,000 levels: deeper than Python's recursion limit, which is what a recursive removal hits.
MAKE_HOSTILE_TREE = r"""
set -e
d=deep
i=0
while [ $i -lt 1000 ]; do d="$d/d"; i=$((i + 1)); done
mkdir -p "$d"
echo bottom > "$d/file"
mkdir -p locked/inner && echo x > locked/inner/f && chmod 000 locked/inner locked
mkdir -- '-leading' 'new
line' 'back\slash'
printf 'x' > "$(printf 'bad\377name')"
"""


async def test_close_removes_a_deep_and_locked_tree(provider: IsolatedSandboxProvider) -> None:
    sandbox = await provider.create()
    try:
        made = await sandbox.exec(MAKE_HOSTILE_TREE, cwd=sandbox.worktree)
        assert made.exit_code == 0, made.stderr
    finally:
        await sandbox.close()  # must not raise
    if provider.name == "local" and provider.options.on_close == "delete":  # type: ignore[attr-defined]
        assert not os.path.lexists(sandbox.worktree), "the worktree is still on disk"
