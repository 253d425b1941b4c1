"""`Workspace.relative` takes a short path for a normal path below a normal root: it must say
exactly what `posixpath.relpath` says, for every path inside the workspace."""

from __future__ import annotations

import posixpath

from hypothesis import given, settings
from hypothesis import strategies as st

from sandlot.workspaces import WorkspaceSet

ROOTS = ["/", "/w", "/w/x", "/a b/c", "/w/./x", "/w//x"]
PARTS = st.lists(st.sampled_from(["a", ".", "..", "", "b c", ".git", "x.", "\n", "-n"]),
                 max_size=6)


@settings(max_examples=2000, deadline=None)
@given(st.sampled_from(ROOTS), PARTS, st.booleans())
def test_relative_agrees_with_relpath(root: str, parts: list[str], trailing: bool) -> None:
    ws = WorkspaceSet({"w": root}).choose("w")
    path = posixpath.join(ws.root, *parts) + ("/" if trailing else "")
    normal = posixpath.normpath(path)
    if normal != ws.root and not normal.startswith(ws.root.rstrip("/") + "/"):
        return  # outside the workspace: not a path relative() is given
    rel = posixpath.relpath(path, ws.root)
    assert ws.relative(path) == ("." if rel == "." else rel)
