"""Making tool paths workspace-relative."""

from __future__ import annotations

import posixpath


def relative(path: str, root: str, base: str = "") -> str:
    """`path` relative to `root`; a relative `path` is taken relative to `root/base`.

    Paths outside the root stay absolute (a finding in a dependency is still worth showing).
    """
    path = path.strip()
    if path.startswith("file://"):
        path = path[len("file://") :]
    if not posixpath.isabs(path):
        path = posixpath.join(root, base, path)
    path = posixpath.normpath(path)
    root = posixpath.normpath(root)
    if path == root:
        return "."
    if path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1 :]
    return path


def excerpt(text: str, limit: int = 4000) -> str:
    """A bounded excerpt of a test's output (the head: where the assertion is)."""
    text = text.strip("\n")
    return text if len(text) <= limit else text[:limit] + "\n... (cut)"


def first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""
