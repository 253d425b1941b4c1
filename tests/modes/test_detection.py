"""Mode selection: argument, then $SANDLOT_MODE, then detection in the sandbox.

Detection is shown on local sandboxes whose PATH holds exactly the runtimes a test wants
(symlinks to this machine's real binaries), so every order of presence can be staged.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import pytest

import sandlot
from sandlot import CommandFailed, RuntimeNotFoundError, Sandbox, UnknownModeError
from sandlot.modes import MODE_ENV, detect_mode, health, run_code
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio

#: What the run program itself needs besides a runtime.
BASICS = ("sh", "mkdir", "cat", "rm", "head", "tail", "ls")
RUNTIMES = {"python": "python3", "golang": "go", "node": "node", "shell": "bash"}

Staged = Callable[..., AbstractAsyncContextManager[Sandbox]]


def real_binary(name: str) -> str:
    """The executable itself, not a version-manager shim that needs its own PATH."""
    path = require_binary(name)
    if name == "python3":
        out = subprocess.run(
            [path, "-c", "import sys; print(sys.executable)"],
            capture_output=True, text=True, check=True,
        )
        path = out.stdout.strip()
    return os.path.realpath(path)


@pytest.fixture
def staged(tmp_path: Path) -> Staged:
    """A local sandbox whose PATH offers only BASICS plus the given runtimes."""

    @asynccontextmanager
    async def make(*binaries: str, fakes: dict[str, str] | None = None) -> AsyncIterator[Sandbox]:
        bin_dir = tmp_path / ("bin-" + "-".join(binaries))
        bin_dir.mkdir()
        for name in (*BASICS, *binaries):
            (bin_dir / name).symlink_to(real_binary(name))
        for name, text in (fakes or {}).items():
            (bin_dir / name).write_text(text)
            (bin_dir / name).chmod(0o755)
        async with sandlot.local(env={"PATH": str(bin_dir)}).session() as sandbox:
            yield sandbox

    return make


@pytest.mark.parametrize(
    ("present", "expected"),
    [
        (("python3", "go", "node", "bash"), "python"),
        (("go", "node", "bash"), "golang"),
        (("node", "bash"), "node"),
        (("bash",), "shell"),
        (("node", "go"), "golang"),
    ],
)
async def test_detection_order(staged: Staged, present: tuple[str, ...], expected: str) -> None:
    async with staged(*present) as sandbox:
        assert await detect_mode(sandbox) == expected
        report = await health(sandbox)
        assert report.mode == expected and report.runtime_version


async def test_detected_mode_runs_the_code(staged: Staged) -> None:
    async with staged("go", "bash") as sandbox:
        code = 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("from go") }\n'
        result = await run_code(sandbox, code)
        assert (result.mode, result.stdout, result.exit_code) == ("golang", "from go\n", 0)


async def test_nothing_detected_lists_what_was_looked_for(staged: Staged) -> None:
    async with staged() as sandbox:
        with pytest.raises(RuntimeNotFoundError) as caught:
            await health(sandbox)
        message = str(caught.value)
        for mode, binary in RUNTIMES.items():
            assert f"{binary} ({mode})" in message
        with pytest.raises(RuntimeNotFoundError):
            await run_code(sandbox, "echo hi")


@pytest.mark.parametrize("mode", list(RUNTIMES))
async def test_configured_mode_missing_runtime(staged: Staged, mode: str) -> None:
    others = [b for m, b in RUNTIMES.items() if m != mode]
    async with staged(*others) as sandbox:
        with pytest.raises(RuntimeNotFoundError) as caught:
            await health(sandbox, mode)
        assert str(caught.value).startswith(
            f"mode={mode} but '{RUNTIMES[mode]}' not found in PATH"
        )


async def test_environment_variable_chooses_the_mode(
    staged: Staged, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with staged("python3", "bash") as sandbox:
        monkeypatch.setenv(MODE_ENV, "shell")
        result = await run_code(sandbox, 'echo "$0"')
        assert result.mode == "shell" and result.stdout.strip().endswith(".sh")
        # The argument wins over the environment.
        result = await run_code(sandbox, "print('py')", mode="python")
        assert (result.mode, result.stdout) == ("python", "py\n")
        monkeypatch.setenv(MODE_ENV, "golang")
        with pytest.raises(RuntimeNotFoundError, match="mode=golang but 'go' not found"):
            await run_code(sandbox, "package main")


async def test_unknown_mode_lists_valid_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    async with sandlot.local().session() as sandbox:
        with pytest.raises(UnknownModeError) as caught:
            await run_code(sandbox, "x", mode="ruby")
        assert "python, golang, node, shell" in str(caught.value)
        monkeypatch.setenv(MODE_ENV, "rust")
        with pytest.raises(UnknownModeError, match=r"\$SANDLOT_MODE.*'rust'.*python, golang"):
            await health(sandbox)
        # Nothing ran, nothing was left.
        assert not (Path(sandbox.worktree) / ".sandlot").exists()


async def test_a_runtime_that_prints_no_version_is_reported(staged: Staged) -> None:
    async with staged("bash", fakes={"node": "#!/bin/sh\nexit 0\n"}) as sandbox:
        with pytest.raises(CommandFailed, match="'node --version' printed nothing"):
            await health(sandbox)
