"""A process in the sandbox swaps a workspace directory for a symlink leading out, as fast as
it can, while the file tools run through that path: in `descriptor` containment nothing outside
is read, created or changed, and no temp file is left anywhere. Where the sandbox has no python3
the toolbox says `path` (the documented, racy mode) instead."""

from __future__ import annotations

import anyio
import pytest

from sandlot import Sandbox
from sandlot.errors import SandlotError
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet

pytestmark = pytest.mark.anyio

ROUNDS = 40

# $1 workspace root, $2 the outside directory. "d" is a real directory most of the time and,
# in between, a symlink to the outside one.
_RACER = r"""
cd "$1" || exit 1
while :; do
  mv d d.real 2>/dev/null; ln -s "$2" d 2>/dev/null; rm -f d 2>/dev/null
  mv d.real d 2>/dev/null
done
"""


async def test_a_racing_symlink_swap_never_leads_outside(
    sandbox: Sandbox, workdir: str, backend: object
) -> None:
    root, outside = f"{workdir}/ws", f"{workdir}/outside"
    await sandbox.exec(["sh", "-c", 'mkdir -p "$1/d" "$2" && printf "inside needle\\n" > '
                        '"$1/d/f.txt" && printf "OUTSIDE needle\\n" > "$2/f.txt"', "sh", root,
                        outside], check=True)
    box = Toolbox(sandbox, WorkspaceSet.parse(f"w={root}"))
    mode = await box.containment()
    if mode == "path":
        # Documented: without python3 the check and the use are two steps.
        assert (await sandbox.exec("command -v python3")).exit_code != 0
        return
    assert mode == "descriptor"
    box.tracker.mark(f"{root}/d/f.txt")
    racer = await sandbox.start(["sh", "-c", _RACER, "sh", root, outside])
    leaked: list[str] = []
    try:
        for i in range(ROUNDS):
            for call in (
                lambda: box.read("d/f.txt"),
                lambda: box.grep("needle", path="d/f.txt"),
                lambda: box.grep("needle", path="d"),
                lambda: box.glob("**/*", path="d"),
                lambda i=i: box.write(f"d/new-{i}.txt", "written\n"),
                lambda: box.write("d/f.txt", "inside needle\n"),
                lambda: box.edit("d/f.txt", "inside needle", "inside needle, edited"),
            ):
                try:
                    result = await call()
                except SandlotError:
                    continue  # refused, not found, changed under us: all fine
                if "OUTSIDE" in getattr(result, "text", ""):
                    leaked.append(result.text)
    finally:
        with anyio.fail_after(60):
            await racer.kill()
    listing = await sandbox.exec(["sh", "-c", 'cat "$1/f.txt"; ls -a "$1"; '
                                  'find "$2" -name ".sandlot-write.*"', "sh", outside, root])
    # (The last command lists temp files left in the workspace: there must be none.)
    assert leaked == []
    assert listing.stdout.splitlines()[0] == "OUTSIDE needle"  # never changed
    assert sorted(listing.stdout.splitlines()[1:]) == [".", "..", "f.txt"]  # nothing created
