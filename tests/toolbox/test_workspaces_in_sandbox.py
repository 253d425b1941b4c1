"""Two workspaces in one sandbox: mounting, choosing a root, and containment (incl. symlinks)."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import pytest

from sandlot import Sandbox
from sandlot.errors import HostPathNotFoundError, PathOutsideWorkspaceError, WorkspaceError
from sandlot.tools import ErrorResult, Toolbox
from sandlot.workspaces import WorkspaceSet, mount

from .conftest import GO_SVC, NODE_LIB

pytestmark = pytest.mark.anyio

NOT_CHOSEN = (
    "multi-workspace sandbox: 2 workspaces configured (extension, primary) — pass `workspace` "
    "to pick one"
)
UNKNOWN = 'unknown workspace "frontend"; configured: extension, primary'

# One valid call per tool that takes `workspace`, without it.
CALLS: dict[str, dict[str, Any]] = {
    "read": {"path": "README.md"},
    "write": {"path": "new.txt", "content": "x"},
    "edit": {"path": "README.md", "old": "a", "new": "b"},
    "glob": {"pattern": "*"},
    "grep": {"pattern": "x"},
    "bash": {"command": "true"},
}


async def test_mount_copies_each_host_directory_under_its_root(
    sandbox: Sandbox, workspaces: WorkspaceSet, workdir: str
) -> None:
    assert workspaces == WorkspaceSet({"primary": f"{workdir}/primary",
                                       "extension": f"{workdir}/extension"})
    listing = await sandbox.exec("find primary extension -type f | LC_ALL=C sort", cwd=workdir)
    assert listing.stdout.split() == sorted(
        [f"primary/{p.relative_to(GO_SVC)}" for p in GO_SVC.rglob("*") if p.is_file()]
        + [f"extension/{p.relative_to(NODE_LIB)}" for p in NODE_LIB.rglob("*") if p.is_file()]
    )


async def test_mount_checks_everything_before_copying(sandbox: Sandbox, workdir: str) -> None:
    with pytest.raises(HostPathNotFoundError):
        await mount(sandbox, {"primary": GO_SVC, "extension": GO_SVC / "missing"},
                    under=workdir)
    with pytest.raises(WorkspaceError):
        await mount(sandbox, {"primary": GO_SVC / "go.mod"}, under=workdir)
    left = await sandbox.exec(["ls", "-A", workdir])
    assert left.stdout == ""


async def test_tools_hit_the_chosen_root(box: Toolbox) -> None:
    go = await box.read("go.mod", workspace="primary")
    node = await box.read("package.json", workspace="extension")
    assert go.text.splitlines()[0] == "     1\tmodule example.com/svc"
    assert '"name": "lib"' in node.text
    readme_go = await box.read("README.md", workspace="primary")
    readme_node = await box.read("README.md", workspace=" extension ")
    assert "A Go service." in readme_go.text and "A Node package." in readme_node.text
    assert (readme_go.workspace, readme_node.workspace) == ("primary", "extension")

    go_files = await box.glob("*.go", workspace="primary")
    js_files = await box.glob("**/*.js", workspace="extension")
    assert go_files.paths == ["internal/version/version.go", "main.go", "main_test.go"]
    assert js_files.paths == ["index.js", "test/index.test.js"]
    assert (await box.glob("*.go", workspace="extension")).paths == []

    hits = await box.grep("greet", workspace="extension")
    assert hits.files == ["index.js", "test/index.test.js"]

    for name in ("primary", "extension"):
        where = await box.bash("pwd -P; ls", workspace=name)
        root = box.workspaces.resolve(name)
        lines = where.stdout.splitlines()
        assert lines[0].endswith(root.rsplit("/", 2)[-2] + "/" + name)
        assert ("go.mod" in lines) == (name == "primary")
        assert ("package.json" in lines) == (name == "extension")


@pytest.mark.parametrize("tool", sorted(CALLS))
async def test_every_tool_needs_a_workspace_when_there_are_two(box: Toolbox, tool: str) -> None:
    result = await box.call(tool, CALLS[tool])
    assert isinstance(result, ErrorResult)
    assert result.text == NOT_CHOSEN
    assert result.error == "WorkspaceError"
    unknown = await box.call(tool, {**CALLS[tool], "workspace": "frontend"})
    assert unknown.text == UNKNOWN


async def test_methods_raise_the_exact_messages(box: Toolbox) -> None:
    with pytest.raises(WorkspaceError) as info:
        await box.read("README.md")
    assert str(info.value) == NOT_CHOSEN
    with pytest.raises(WorkspaceError) as info:
        await box.bash("true", workspace="frontend")
    assert str(info.value) == UNKNOWN
    with pytest.raises(WorkspaceError) as info:
        await box.glob("*", workspace="Primary")
    assert str(info.value) == 'unknown workspace "Primary"; configured: extension, primary'


async def test_one_workspace_needs_no_name(sandbox: Sandbox, workspaces: WorkspaceSet) -> None:
    single = Toolbox(sandbox, {"svc": workspaces.resolve("primary")})
    assert (await single.read("go.mod")).workspace == "svc"
    assert (await single.bash("test -f go.mod")).exit_code == 0


# ---- containment in the sandbox ------------------------------------------------------------


@pytest.fixture
async def links(sandbox: Sandbox, workspaces: WorkspaceSet) -> str:
    """Symlinks inside `primary`: some lead out (of the sandbox tree or into `extension`)."""
    root = workspaces.resolve("primary")
    nowhere = f"/tmp/sandlot-nowhere-{uuid.uuid4().hex}"
    script = f"""
        ln -s /etc etc-link
        ln -s /etc/passwd passwd-link
        ln -s ../extension ext-link
        ln -s ../extension/package.json ext-file
        ln -s {nowhere}/x dangling-out
        ln -s etc-link chain
        ln -s internal inner-link
        ln -s main.go main-link
        mkdir -p sub && ln -s ../.. sub/up2
        ln -s missing-dir/../../../../../../../../etc/sandlot-new-file dotdot-dangling
    """
    await sandbox.exec(script, cwd=root, check=True)
    return nowhere


ESCAPES = [
    "../extension/package.json",
    "../../etc/passwd",
    "/etc/passwd",
    "internal/../../extension/index.js",
    "internal/version/../../../extension",
    "\uff0e\uff0e\uff0fextension/package.json",
    "\u2024\u2024/extension/index.js",
    "..\u2215extension",
    "etc-link/passwd",
    "etc-link",
    "passwd-link",
    "ext-link/package.json",
    "ext-file",
    "chain/hostname",
    "sub/up2/extension/index.js",
    "etc-link/sandlot-new-file",
    "dangling-out",
    "dotdot-dangling",
]


async def test_escapes_are_refused_by_every_file_tool(
    box: Toolbox, links: str, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    unrefused: list[tuple[str, str]] = []
    for path in ESCAPES:
        # Pretend the path was read, so edit gets as far as the sandbox-side check.
        with contextlib.suppress(PathOutsideWorkspaceError):
            box.tracker.mark(workspaces["primary"].contain(path))
        calls = {
            "read": box.read(path, workspace="primary"),
            "write": box.write(path, "owned\n", workspace="primary"),
            "edit": box.edit(path, "root", "owned", workspace="primary"),
            "glob": box.glob("*", path=path, workspace="primary"),
            "grep": box.grep("root", path=path, workspace="primary"),
        }
        for tool, call in calls.items():
            try:
                await call
            except PathOutsideWorkspaceError as exc:
                assert f'path "{path}"' in str(exc) and 'workspace "primary"' in str(exc)
            else:
                unrefused.append((tool, path))
    assert unrefused == []
    # Nothing was written anywhere outside.
    probe = await sandbox.exec(f"test -e {links} || test -e /etc/sandlot-new-file; echo $?")
    assert probe.stdout.strip() == "1"
    untouched = await box.read("package.json", workspace="extension")
    assert "owned" not in untouched.text


async def test_symlinks_inside_the_root_still_work(box: Toolbox, links: str) -> None:
    via_link = await box.read("inner-link/version/version.go", workspace="primary")
    assert 'Version = "1.2.3"' in via_link.text
    assert via_link.path == "inner-link/version/version.go"
    await box.read("main-link", workspace="primary")
    edited = await box.edit("main-link", '"world"', '"links"', workspace="primary")
    assert edited.replacements == 1
    # The edit went through the link to its target; the link is still a link.
    real = await box.bash("test -L main-link && grep -c links main.go", workspace="primary")
    assert real.stdout.strip() == "1"
    found = await box.grep("Version =", path="inner-link", workspace="primary")
    assert [ln.path for ln in found.lines] == ["inner-link/version/version.go"]


async def test_the_symlink_error_names_the_target(box: Toolbox, links: str,
                                                  workspaces: WorkspaceSet) -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        await box.read("passwd-link", workspace="primary")
    root = workspaces.resolve("primary")
    assert str(info.value) == (
        f'path "passwd-link" resolves through a symlink to /etc/passwd, which is outside '
        f'workspace "primary" (root {root}); symlinks may not lead out of the workspace'
    )


async def test_a_missing_root_is_reported(sandbox: Sandbox, workdir: str) -> None:
    box = Toolbox(sandbox, {"gone": f"{workdir}/does-not-exist"})
    with pytest.raises(WorkspaceError) as info:
        await box.read("x")
    assert str(info.value) == (
        f'workspace "gone" root {workdir}/does-not-exist does not exist in the sandbox (or is '
        "not a directory); create it or mount the workspace first"
    )
