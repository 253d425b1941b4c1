"""Names an attacker (or a careless repository) can make: newlines, a lone "-", backslashes,
invalid UTF-8, one enormous line. Both search engines, read-only toolboxes too, every backend."""

from __future__ import annotations

import pytest

from sandlot import Sandbox
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet

pytestmark = pytest.mark.anyio

# In the primary workspace: a directory "y<newline>" holding etc/os-release, a directory
# "x<newline>.." holding a file, a file named "-", a backslash name, a Latin-1 file.
_MAKE = r"""
cd "$1" || exit 1
mkdir -p "y
/etc" "x
../inner" && printf 'PRETTY_NAME=inside\n' > "y
/etc/os-release" && printf 'beside\n' > "x
../inner/f.txt"
printf 'needle in dash\n' > ./-
printf 'plain needle\n' > 'back\slash.txt'
printf 'caf\351 needle\n' > latin1.txt
"""


@pytest.fixture
async def hostile(sandbox: Sandbox, workspaces: WorkspaceSet) -> None:
    root = workspaces["primary"].root
    await sandbox.exec(["sh", "-c", _MAKE, "sh", root], check=True)


@pytest.mark.parametrize("readonly", [False, True], ids=["rw", "readonly"])
async def test_a_newline_in_a_name_does_not_leave_the_workspace(
    sandbox: Sandbox, workspaces: WorkspaceSet, use_ripgrep: bool, hostile: None,
    readonly: bool,
) -> None:
    box = Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep, readonly=readonly)
    found = await box.grep("^PRETTY_NAME", workspace="primary")
    assert [(ln.path, ln.text) for ln in found.lines] == [("y\n/etc/os-release",
                                                           "PRETTY_NAME=inside")]
    listed = await box.glob("**/*", workspace="primary")
    assert "y\n/etc/os-release" in listed.paths and "x\n../inner/f.txt" in listed.paths
    assert not any(p.startswith("/") or ".." in p.split("/") for p in listed.paths)


async def test_a_file_named_dash_is_searched(
    sandbox: Sandbox, workspaces: WorkspaceSet, use_ripgrep: bool, hostile: None
) -> None:
    box = Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep)
    whole = await box.grep("needle", workspace="primary")
    assert {ln.path for ln in whole.lines} >= {"-", "back\\slash.txt", "latin1.txt"}
    one = await box.grep("needle", path="-", workspace="primary")
    assert [ln.text for ln in one.lines] == ["needle in dash"]


async def test_both_engines_agree_on_invalid_utf8(
    sandbox: Sandbox, workspaces: WorkspaceSet, hostile: None
) -> None:
    results = []
    for use_ripgrep in (True, False):
        box = Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep)
        found = await box.grep("needle", path="latin1.txt", workspace="primary")
        results.append([(ln.line, ln.text) for ln in found.lines])
    assert results[0] == results[1] == [(1, "caf\ufffd needle")]


async def test_both_grep_routes_agree_on_hostile_names(
    sandbox: Sandbox, workspaces: WorkspaceSet, hostile: None
) -> None:
    """grep in the session helper (no rg start) and by rg give the same results on the
    hostile tree, plus an invalid-UTF-8 name, a binary file, a symlink to a file outside the
    workspace and one to a directory above it: neither route follows a symlink out."""
    root = workspaces["primary"].root
    await sandbox.exec(["sh", "-c", 'cd "$1" && printf "needle outside\\n" > ../outside.txt && '
                        'ln -s ../outside.txt escape.txt && ln -s .. up && '
                        'printf "needle\\000bin\\n" > blob.bin && '
                        'printf "needle bad name\\n" > "$(printf "bad\\377.txt")"', "sh", root],
                       check=True)
    routes = [Toolbox(sandbox, workspaces), Toolbox(sandbox, workspaces,
                                                    env={"SANDLOT_GREP_PROCESS": "1"})]
    for kwargs in [{"pattern": "needle"}, {"pattern": "NEEDLE", "ignore_case": True},
                   {"pattern": "^PRETTY_NAME|needle$", "context": 1},
                   {"pattern": "needle", "path": "-"}]:
        found = [await box.grep(workspace="primary", **kwargs)  # type: ignore[arg-type]
                 for box in routes]
        assert found[0] == found[1], kwargs
    whole = await routes[0].grep("needle", workspace="primary")
    assert {"-", "back\\slash.txt", "latin1.txt", "bad\ufffd.txt"} <= set(whole.files)
    assert whole.binary_files == ["blob.bin"]
    assert not any(p in ("escape.txt", "outside.txt") or p.startswith("up/")
                   for p in whole.files)


async def test_one_enormous_line_is_bounded_not_slow(
    sandbox: Sandbox, workspaces: WorkspaceSet, use_ripgrep: bool
) -> None:
    root = workspaces["primary"].root
    # 64 MiB on one line, the match at its end.
    await sandbox.exec(["sh", "-c", "head -c 67108864 /dev/zero | tr '\\000' a > \"$1/huge.txt\""
                        " && printf 'needle\\n' >> \"$1/huge.txt\"", "sh", root], check=True)
    box = Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep, timeout=60)
    found = await box.grep("needle", path="huge.txt", workspace="primary")
    assert found.truncated or [ln.line for ln in found.lines] == [1]


async def test_a_python_module_in_the_workspace_is_not_run_by_the_tools(
    sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    root = workspaces["primary"].root
    # Modules the race-free helper imports, planted in the workspace, which PYTHONPATH names
    # (as many development images set it): the helper runs isolated from both.
    plant = ('cd "$1" && for m in json hashlib subprocess stat errno; do '
             'printf "raise SystemExit(\'planted %s ran\')\\n" "$m" > "$m.py"; done; '
             "printf 'safe\\n' > plain.txt")
    await sandbox.exec(["sh", "-c", plant, "sh", root], check=True)
    try:
        box = Toolbox(sandbox, workspaces, env={"PYTHONPATH": root})
        read = await box.read("plain.txt", workspace="primary")
        assert read.text == "     1\tsafe"
        found = await box.grep("safe", workspace="primary")
        assert [ln.path for ln in found.lines] == ["plain.txt"]
    finally:
        await sandbox.exec(["sh", "-c", 'cd "$1" && rm -f json.py hashlib.py subprocess.py '
                            'stat.py errno.py plain.txt', "sh", root], check=True)
