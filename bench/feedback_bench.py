"""Post-edit feedback: an edit through the toolbox with its checks, against the same edit
without them, on a Python and a Go file (adr/0049).

The goal is `edit with feedback <= 1.5 x edit alone + the linter's own time on that file`. The
linter's own time is the same tools run directly on the file in one exec (ruff format --check
and ruff check; gofmt -l and go vet of the package), measured interleaved with the two edits.
The table's ratio is (edit with feedback - linter's own time) / edit alone, against 1.5x; the
raw times are in `extra`.
"""

from __future__ import annotations

import shutil
import statistics
import time
from collections.abc import Awaitable, Callable

import sandlot
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet

from .core import Measurement, Unavailable

PY = ("app.py", "def add(a: int, b: int) -> int:\n    return a + b\n\n\nVALUE = 1\n",
      "ruff format --check --no-cache app.py; ruff check --no-cache app.py")
GO = ("calc.go", "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn a + b\n}"
      "\n\n// VALUE is a value.\nconst VALUE = 1\n", "gofmt -l calc.go; go vet .")
GO_MOD = "module example.com/calc\n\ngo 1.21\n"


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return time.perf_counter() - started


async def _measure(language: str, rounds: int) -> Measurement:
    name, content, direct = PY if language == "python" else GO
    async with sandlot.local().session() as sandbox:
        root = sandbox.worktree
        if language == "go":
            await sandbox.exec(["sh", "-c", 'cat > go.mod'], cwd=root, stdin=GO_MOD, check=True)
        with_feedback = Toolbox(sandbox, WorkspaceSet({"w": root}), feedback_budget=60)
        alone = Toolbox(sandbox, WorkspaceSet({"w": root}), feedback=False)
        await with_feedback.write(name, content)
        await with_feedback.read(name)
        await alone.read(name)
        values = ["1", "2"]
        state = {"at": 0}

        async def edit(box: Toolbox) -> None:
            old, new = values[state["at"] % 2], values[(state["at"] + 1) % 2]
            state["at"] += 1
            result = await box.edit(name, f"VALUE = {old}", f"VALUE = {new}")
            assert result.ok, result.text

        async def linter() -> None:
            await sandbox.exec(direct, cwd=root)

        samples: dict[str, list[float]] = {"feedback": [], "alone": [], "linter": []}
        calls: dict[str, Callable[[], Awaitable[object]]] = {
            "feedback": lambda: edit(with_feedback), "alone": lambda: edit(alone),
            "linter": linter}
        for _ in range(2):  # warm-up: caches of go vet and ruff
            for call in calls.values():
                await call()
        order = list(calls)
        for i in range(rounds):
            for key in order[i % 3:] + order[:i % 3]:
                samples[key].append(await _timed(calls[key]))
    feedback, edit_alone, lint = (statistics.median(samples[k])
                                  for k in ("feedback", "alone", "linter"))
    label = "Python (ruff)" if language == "python" else "Go (gofmt, go vet)"
    return Measurement(
        "feedback", "local", f"edit + feedback - linter, {label}", "edit alone",
        feedback - lint, edit_alone, "s", target="<=1.5x",
        notes="edit with feedback minus the linter's own time on the file, over the edit alone",
        extra={"edit_with_feedback_s": feedback, "edit_alone_s": edit_alone,
               "linter_direct_s": lint, "rounds": rounds},
    )


async def run(quick: bool = False) -> list[Measurement]:
    missing = [tool for tool in ("ruff", "go", "gofmt") if shutil.which(tool) is None]
    if missing:
        raise Unavailable(f"not on PATH: {', '.join(missing)} (scripts/setup.d/40-verify-tools.sh)")
    rounds = 5 if quick else 15
    return [await _measure("python", rounds), await _measure("go", rounds)]
