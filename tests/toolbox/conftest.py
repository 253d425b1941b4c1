"""Fixtures for the toolbox tests: two workspaces (a Go module and a Node package) mounted
into the shared sandbox of every registered backend (tests/backends: one line adds one)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sandlot import Sandbox
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet, mount
from tests.helpers import require

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "toolbox"
GO_SVC = FIXTURES / "go-svc"
NODE_LIB = FIXTURES / "node-lib"


@pytest.fixture(scope="session")
async def pristine(sandbox: Sandbox) -> WorkspaceSet:
    """The two fixture workspaces mounted once per sandbox, never changed."""
    return await mount(sandbox, {"primary": GO_SVC, "extension": NODE_LIB},
                       under=f"{sandbox.worktree}/toolbox-pristine")


@pytest.fixture
async def workspaces(sandbox: Sandbox, workdir: str, pristine: WorkspaceSet) -> WorkspaceSet:
    """`primary` (Go module) and `extension` (Node package): this test's own copy.

    One `cp -a` in the sandbox per test instead of a fresh mount (remote round trips add up).
    """
    roots = [w.root for w in pristine]
    await sandbox.exec(["cp", "-a", *roots, workdir], check=True)
    return WorkspaceSet({w.name: f"{workdir}/{w.name}" for w in pristine})


@pytest.fixture
def box(sandbox: Sandbox, workspaces: WorkspaceSet) -> Toolbox:
    # The file tools on their own: post-edit feedback has its tests (tests/feedback).
    return Toolbox(sandbox, workspaces, feedback=False)


@pytest.fixture(params=["rg", "rg-process", "fallback"])
def use_ripgrep(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """ripgrep, or the portable fallback. "rg" is grep served inside the session helper where
    that is exact (sandlot/_session/helper/search.py); "rg-process" the same with rg started
    for every search (the knob SANDLOT_GREP_PROCESS in every toolbox's environment), so each
    grep test runs on both routes."""
    if request.param == "rg-process":
        init = Toolbox.__init__

        def with_knob(self: Toolbox, *args: Any, **kwargs: Any) -> None:
            init(self, *args, **kwargs)
            self.env = {**self.env, "SANDLOT_GREP_PROCESS": "1"}

        monkeypatch.setattr(Toolbox, "__init__", with_knob)
    return bool(request.param != "fallback")


@pytest.fixture
async def has_rg(sandbox: Sandbox, backend: ModuleType) -> bool:
    """Whether the sandbox has ripgrep (on this machine it must: setup.d installs it)."""
    found = await sandbox.exec("command -v rg")
    if backend.NAME.startswith("local"):
        require(found.ok, "ripgrep not installed on this machine (scripts/setup.d/40-toolbox.sh)")
    return found.ok


@pytest.fixture
def search_box(sandbox: Sandbox, workspaces: WorkspaceSet, use_ripgrep: bool) -> Toolbox:
    """A toolbox that uses ripgrep where the sandbox has it, or one forced onto the fallback."""
    return Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep)


@pytest.fixture
def engines(use_ripgrep: bool, has_rg: bool) -> tuple[str, str]:
    """The (glob, grep) engines the results must report."""
    return ("rg", "rg") if use_ripgrep and has_rg else ("find", "grep")
