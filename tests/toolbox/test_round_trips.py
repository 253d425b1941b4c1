"""Each tool call costs one sandbox round trip (edit: two), on every backend: counted at the
backend hook every command goes through. With the session helper (the default) a file tool
call starts no command at all once the helper runs; without it, one per call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sandlot import Sandbox
from sandlot.sandbox import RunningCommand, SpawnSpec
from sandlot.tools import Toolbox

pytestmark = pytest.mark.anyio


async def count_spawns(sandbox: Sandbox, call: Callable[[], Awaitable[Any]]) -> int:
    original = sandbox._spawn
    spawned: list[SpawnSpec] = []

    async def counting(spec: SpawnSpec) -> RunningCommand:
        spawned.append(spec)
        return await original(spec)

    sandbox._spawn = counting  # type: ignore[method-assign]
    try:
        await call()
    finally:
        del sandbox._spawn  # back to the class's method
    return len(spawned)


async def test_round_trips_per_tool_without_the_session_helper(
    sandbox: Sandbox, box: Toolbox
) -> None:
    was, sandbox._session_helper = sandbox._session_helper, False
    try:
        await check_round_trips(sandbox, box, one_per_call=True)
    finally:
        sandbox._session_helper = was


async def test_file_tools_start_nothing_once_the_session_helper_runs(
    sandbox: Sandbox, box: Toolbox
) -> None:
    was, sandbox._session_helper = sandbox._session_helper, True
    try:
        await box.read("main.go", workspace="primary")  # starts the helper (if not running)
        # Without python3 (the busybox image) there is no helper: one command per call.
        no_python = await box.containment() == "path"
        await check_round_trips(sandbox, box, one_per_call=no_python)
    finally:
        sandbox._session_helper = was


async def check_round_trips(sandbox: Sandbox, box: Toolbox, *, one_per_call: bool) -> None:
    n = 1 if one_per_call else 0
    expected: list[tuple[int, Callable[[], Awaitable[Any]]]] = [
        (n, lambda: box.read("main.go", workspace="primary")),
        (n, lambda: box.write("main.go", "package main\n\nfunc main() {}\n",
                              workspace="primary")),
        (n, lambda: box.write("fresh/new.go", "package fresh\n", workspace="primary")),
        (2 * n, lambda: box.edit("main.go", "func main() {}", "func main() { }",
                                 workspace="primary")),
        (n, lambda: box.glob("**/*.go", workspace="primary")),
        (n, lambda: box.grep("package", context=1, glob="*.go", workspace="primary")),
        (1, lambda: box.bash("true", workspace="primary")),
    ]
    counts = [await count_spawns(sandbox, call) for _, call in expected]
    assert counts == [n for n, _ in expected]
