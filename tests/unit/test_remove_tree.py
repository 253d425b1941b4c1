"""remove_tree: deeper than Python's recursion limit, locked directories, hostile names."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from sandlot._tree import remove_tree


def make_deep(root: Path, levels: int) -> None:
    # GNU mkdir -p walks relative to the directory it made, so the path may exceed PATH_MAX.
    subprocess.run(["mkdir", "-p", "/".join(["d"] * levels)], cwd=root, check=True)


def test_shutil_rmtree_cannot_do_this(tmp_path: Path) -> None:
    # The reason remove_tree exists: if Python's own removal copes one day, this says so.
    tree = tmp_path / "tree"
    tree.mkdir()
    make_deep(tree, 1500)
    with pytest.raises(RecursionError):
        shutil.rmtree(tree, ignore_errors=True)
    assert remove_tree(tree)


def test_removes_deep_locked_and_oddly_named_trees(tmp_path: Path) -> None:
    tree = tmp_path / "-tree"
    tree.mkdir()
    make_deep(tree, 2000)
    locked = tree / "locked" / "inner"
    locked.mkdir(parents=True)
    (locked / "f").write_text("x")
    os.chmod(locked, 0)
    os.chmod(locked.parent, 0)
    for name in ("new\nline", "back\\slash", "-leading"):
        (tree / name).mkdir()
    (tree / os.fsdecode(b"bad\xffname")).write_text("x")
    (tree / "link").symlink_to("/etc")
    assert remove_tree(tree)
    assert not tree.exists()
    assert Path("/etc").is_dir()  # a symlink inside is removed, not followed


def test_missing_path_and_single_file(tmp_path: Path) -> None:
    assert remove_tree(tmp_path / "absent")
    single = tmp_path / "file"
    single.write_text("x")
    assert remove_tree(single)
    assert not single.exists()
