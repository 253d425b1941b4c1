"""sandlot.progress: plain lines off a terminal, a spinner then one line on a terminal."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from sandlot.progress import activity, describe_size, tree_size


def test_tree_size_counts_files_and_bytes_without_following_links(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "one").write_bytes(b"x" * 1000)
    (tmp_path / "two").write_bytes(b"y" * 24)
    (tmp_path / "link").symlink_to("/etc")
    files, size = tree_size(tmp_path)
    assert files == 3
    assert size == 1024 + len("/etc")
    assert tree_size(tmp_path / "two") == (1, 24)
    assert describe_size(3, 1028) == "3 files, 1.0 KiB"
    assert describe_size(1, 5) == "1 file, 5 B"
    assert describe_size(2, 3 << 30) == "2 files, 3.0 GiB"


def test_activity_off_a_terminal_prints_start_and_done() -> None:
    out = io.StringIO()
    with activity(Console(file=out, width=200), "copying [x] in"):
        pass
    lines = out.getvalue().splitlines()
    assert lines[0] == "sandlot: copying [x] in ..."
    assert lines[1].startswith("sandlot: copying [x] in: done in ")


def test_activity_says_when_it_failed() -> None:
    out = io.StringIO()
    with pytest.raises(RuntimeError), activity(Console(file=out, width=200), "copying"):
        raise RuntimeError("boom")
    assert "copying: failed after" in out.getvalue()


def test_activity_on_a_terminal_ends_with_one_line() -> None:
    out = io.StringIO()
    terminal = Console(file=out, force_terminal=True, width=120)
    with activity(terminal, "building"):
        pass
    assert "building: done in" in out.getvalue()


def test_quiet_prints_nothing() -> None:
    out = io.StringIO()
    with activity(Console(file=out), "x", quiet=True):
        pass
    assert out.getvalue() == ""
