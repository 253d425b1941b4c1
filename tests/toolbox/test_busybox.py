"""The portable path on a busybox-only userland: no GNU tools, no ripgrep, busybox sh.

Runs on a local sandbox of its own whose tool commands see a PATH holding only busybox
applets, so every script is executed by busybox's sh, find, grep, awk, readlink, md5sum...
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

import sandlot
from sandlot import Sandbox
from sandlot.errors import NotReadError, PathOutsideWorkspaceError
from sandlot.tools import Toolbox
from sandlot.workspaces import mount
from tests.helpers import require_binary

from .conftest import GO_SVC, NODE_LIB

pytestmark = pytest.mark.anyio


@pytest.fixture
async def busybox_box() -> AsyncIterator[tuple[Toolbox, Sandbox]]:
    busybox = require_binary("busybox", "apt-get install busybox (scripts/setup.d/40-toolbox.sh)")
    async with sandlot.local().session() as sandbox:
        bb = f"{sandbox.worktree}/busybox-bin"
        await sandbox.exec(
            f'mkdir {bb} && for a in $({busybox} --list); do ln -s {busybox} {bb}/"$a"; done',
            check=True)
        workspaces = await mount(sandbox, {"primary": GO_SVC, "extension": NODE_LIB})
        box = Toolbox(sandbox, workspaces, env={"PATH": bb})
        probe = await box.bash(
            'for c in rg find sh; do command -v $c || echo "no $c"; done; '
            "readlink -f $(command -v grep)", workspace="primary")
        assert probe.stdout.splitlines() == ["no rg", f"{bb}/find", f"{bb}/sh", busybox]
        yield box, sandbox


async def test_every_tool_works_on_busybox(busybox_box: tuple[Toolbox, Sandbox]) -> None:
    box, sandbox = busybox_box
    page = await box.read("go.mod", workspace="primary")
    assert page.text.splitlines()[0] == "     1\tmodule example.com/svc"
    with pytest.raises(NotReadError):
        await box.write("package.json", "{}", workspace="extension")
    await box.write("new/x.txt", "a\nb\n", workspace="extension")
    await box.read("package.json", workspace="extension")
    await box.edit("package.json", '"1.0.0"', '"1.1.0"', workspace="extension")
    assert '"version": "1.1.0"' in (await box.read("package.json", workspace="extension")).text

    found = await box.glob("*.go", workspace="primary")
    assert (found.engine, found.paths) == ("find", ["internal/version/version.go", "main.go",
                                                    "main_test.go"])
    hits = await box.grep(r"greet\(\"\w+\"\)", context=1, workspace="primary")
    assert hits.engine == "grep"
    assert [(ln.path, ln.line, ln.match) for ln in hits.lines] == [
        ("main.go", 13, False), ("main.go", 14, True), ("main.go", 15, False),
        ("main_test.go", 5, False), ("main_test.go", 6, True), ("main_test.go", 7, False)]
    # The file filter holds on the portable path too (it was read inside a function, where
    # "$5" is the function's own, empty, argument: every file was searched).
    only = await box.grep(r"greet", glob="*_test.go", workspace="primary")
    assert {ln.path for ln in only.lines} == {"main_test.go"}

    root = box.workspaces.resolve("primary")
    await sandbox.exec("ln -s /etc etc-link && ln -s ../extension ext-link", cwd=root,
                       check=True)
    for path in ["etc-link/passwd", "ext-link/package.json", "../extension/index.js"]:
        with pytest.raises(PathOutsideWorkspaceError):
            await box.read(path, workspace="primary")
        with pytest.raises(PathOutsideWorkspaceError):
            await box.write(path, "x", workspace="primary")
