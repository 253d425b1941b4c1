"""What the verify tests and the recording script share: where the fixtures and tools are, the
environment that puts the tools first on PATH, and copying a fixture into a sandbox."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sandlot import Sandbox

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "verify"
OVERLAYS = FIXTURES / "overlays"
RECORDED = FIXTURES / "recorded"

#: Where scripts/setup.d/40-verify-tools.sh installs golangci-lint, ruff, mypy and pytest.
TOOLS = Path(os.environ.get("SANDLOT_VERIFY_TOOLS", "/opt/sandlot/verify-tools"))

#: Shared build caches, so each test's fresh copy of a fixture does not rebuild from scratch.
CARGO_TARGET = Path(os.environ.get("SANDLOT_VERIFY_CARGO_TARGET", "/tmp/sandlot-verify-cargo"))


def tool_path(base: str | None = None) -> str:
    """PATH with the verify tools first (then the caller's PATH)."""
    rest = base if base is not None else os.environ.get("PATH", "")
    return f"{TOOLS / 'bin'}:{rest}"


def tool_env() -> dict[str, str]:
    """Environment for a local provider whose sandboxes can run every verify tool."""
    return {
        "PATH": tool_path(),
        "CARGO_TARGET_DIR": str(CARGO_TARGET),
        # Colour codes would only get in the way of the text parsers.
        "NO_COLOR": "1",
        "CARGO_TERM_COLOR": "never",
        "RUST_BACKTRACE": "0",
    }


def path_without(binary: str) -> str:
    """PATH minus every directory holding `binary` (to show the "not installed" errors)."""
    keep = []
    for entry in tool_path().split(":"):
        if entry and not (Path(entry) / binary).exists():
            keep.append(entry)
    return ":".join(keep)


def missing_tools() -> list[str]:
    """Which of the tools the verify tests need are absent."""
    needed = ["go", "cargo", "cargo-clippy", "node", "npm"]
    absent = [b for b in needed if shutil.which(b, path=tool_path()) is None]
    for tool in ("golangci-lint", "ruff", "mypy", "pytest"):
        if not (TOOLS / "bin" / tool).exists():
            absent.append(f"{TOOLS / 'bin' / tool} (scripts/setup.d/40-verify-tools.sh)")
    for fixture in ("node", "node-jest", "node-vitest", "node-composite"):
        if not (FIXTURES / fixture / "node_modules").is_dir():
            absent.append(f"tests/fixtures/verify/{fixture}/node_modules")
    return absent


async def copy_fixture(sandbox: Sandbox, name: str, *overlays: str, dest: str | None = None) -> str:
    """Copy a fixture (then overlays on top) into the sandbox; return where it landed."""
    where = dest or sandbox.worktree
    await sandbox.copy_in(FIXTURES / name, where)
    for overlay in overlays:
        await sandbox.copy_in(OVERLAYS / overlay, where)
    return where
