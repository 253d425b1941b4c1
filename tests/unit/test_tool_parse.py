"""The glob/grep output parsers, on output recorded from the real engines.

The files in tests/fixtures/toolbox/captured/ come from scripts/capture-toolbox-fixtures.py
(ripgrep 13, GNU grep/find, busybox 1.35): rerun it after changing the scripts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandlot.tools.models import GrepLine
from sandlot.tools.parse import parse_listing, parse_search

CAPTURED = Path(__file__).resolve().parents[1] / "fixtures" / "toolbox" / "captured"
ENGINES = ["rg", "gnu", "busybox"]


def load(name: str) -> bytes:
    return (CAPTURED / name).read_bytes()


def line(path: str, number: int, text: str, match: bool = True) -> GrepLine:
    return GrepLine(path=path, line=number, text=text, match=match)


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_with_context_and_ignore_case(engine: str) -> None:
    search = parse_search(load(f"grep-needle-{engine}.out"), 100)
    assert search.engine == ("rg" if engine == "rg" else "find")
    assert search.kind == "dir"
    assert search.lines == [
        # a file named "-" is searched, not standard input
        line("-", 1, "needle in a file named dash"),
        line("a.txt", 1, "alpha", False),
        line("a.txt", 2, "needle one"),
        line("a.txt", 3, "beta", False),
        line("a.txt", 5, "delta", False),
        line("a.txt", 6, "needle two"),
        line("dir-1-x/b.go", 1, "package b", False),
        line("dir-1-x/b.go", 2, "// Needle in go"),
        line("dir-1-x/b.go", 3, "func B() {}", False),
        # not UTF-8: both engines find the line (its byte shown as U+FFFD)
        line("latin1.txt", 1, "caf\ufffd needle"),
        # a name full of colons and digits is not mistaken for a line prefix
        line("odd:name:7:.txt", 1, "needle: with colons"),
    ]
    assert search.binary_files == ["blob.bin"]
    assert search.cut == 0


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_digit_shorthand_and_file_filter(engine: str) -> None:
    search = parse_search(load(f"grep-digits-{engine}.out"), 100)
    assert search.lines == [line("v2.txt", 1, "version 12 and 7")]


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_cut_is_reported(engine: str) -> None:
    search = parse_search(load(f"grep-needle-{engine}.out"), 3)
    assert [ln.path for ln in search.lines] == ["-", "a.txt", "a.txt"]
    assert search.cut == 8  # of the 11 lines above


@pytest.mark.parametrize("engine", ENGINES)
def test_a_newline_in_a_name_does_not_leave_the_root(engine: str) -> None:
    # A directory named "y\n" holding etc/os-release: the name arrives whole, as ONE relative
    # path, and its content is the file inside the root.
    search = parse_search(load(f"grep-pretty-{engine}.out"), 100)
    assert search.lines == [line("y\n/etc/os-release", 1, "PRETTY_NAME=inside")]
    listing = parse_listing(load(f"glob-all-{engine}.out"), 100)
    assert "y\n/etc/os-release" in listing.paths
    assert all(not p.startswith("/") and ".." not in p.split("/") for p in listing.paths)
    assert "back\\slash.txt" in listing.paths and "-" in listing.paths


@pytest.mark.parametrize("engine", ENGINES)
def test_grep_on_a_file_named_dash(engine: str) -> None:
    search = parse_search(load(f"grep-dash-{engine}.out"), 100)
    assert search.kind == "file"
    assert [ln.text for ln in search.lines] == ["needle in a file named dash"]


@pytest.mark.parametrize("engine", ENGINES)
def test_glob_listing(engine: str) -> None:
    listing = parse_listing(load(f"glob-{engine}.out"), 2)
    assert listing.engine == ("rg" if engine == "rg" else "find")
    assert listing.paths == ["a.txt", "back\\slash.txt"]
    assert listing.cut == 3


def test_names_that_cannot_come_from_the_lister_are_dropped() -> None:
    raw = b"\x1eengine find\0./ok\0/etc/passwd\0./a/../../x\0./a//b\0./partial"
    assert parse_listing(raw, 100).paths == ["ok"]


def test_a_json_line_cut_by_the_byte_bound_is_ignored() -> None:
    raw = load("grep-digits-rg.out")
    head = raw[: raw.index(b'"line_number"')]
    assert parse_search(head, 100).lines == []


def test_non_utf8_text_from_ripgrep_bytes_field() -> None:
    raw = (b'\x1eengine rg\n\x1ekind dir\n{"type":"match","data":{"path":{"text":"l.txt"},'
           b'"lines":{"bytes":"Y2Fm6Q0K"},"line_number":3,"submatches":[]}}\n')
    assert parse_search(raw, 100).lines == [line("l.txt", 3, "caf\ufffd")]
