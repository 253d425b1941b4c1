"""Each tool call costs one sandbox round trip (edit: two), on every backend: counted at the
backend hook every command goes through."""

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


async def test_round_trips_per_tool(sandbox: Sandbox, box: Toolbox) -> None:
    expected: list[tuple[int, Callable[[], Awaitable[Any]]]] = [
        (1, lambda: box.read("main.go", workspace="primary")),
        (1, lambda: box.write("main.go", "package main\n\nfunc main() {}\n",
                              workspace="primary")),
        (1, lambda: box.write("fresh/new.go", "package fresh\n", workspace="primary")),
        (2, lambda: box.edit("main.go", "func main() {}", "func main() { }",
                             workspace="primary")),
        (1, lambda: box.glob("**/*.go", workspace="primary")),
        (1, lambda: box.grep("package", context=1, glob="*.go", workspace="primary")),
        (1, lambda: box.bash("true", workspace="primary")),
    ]
    counts = [await count_spawns(sandbox, call) for _, call in expected]
    assert counts == [n for n, _ in expected]
