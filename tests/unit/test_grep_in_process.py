"""grep in the session helper without rg (sandlot/_session/helper/search.py) against rg itself:
the same files, opened the same way, searched by both routes, must give the same events --
field for field, except rg's own clock. Patterns outside the subset are left to rg; the
properties check that whatever the subset accepts, rg accepts and answers alike."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandlot._session.helper import search
from sandlot.tools import safe_helper
from sandlot.tools.parse import parse_search
from tests.helpers import require_binary


@pytest.fixture(autouse=True)
def _rg() -> None:
    require_binary("rg", "scripts/setup.d/40-toolbox.sh installs ripgrep")


def _open(files: dict[str, bytes], root: Path) -> list[tuple[str, int]]:
    entries = []
    for index, (name, data) in enumerate(files.items()):
        path = root / f"f{index}"
        path.write_bytes(data)
        entries.append((name, os.open(path, os.O_RDONLY)))
    return entries


def _route(files: dict[str, bytes], root: Path, pattern: str, icase: bool, ctx: int,
           in_process: bool) -> tuple[bytes, int]:
    """The op's output for FILES by one route, and how many rg runs it took."""
    out = bytearray()
    runs = []
    real = safe_helper.rg_events

    def counted(*args: Any) -> list[dict[str, object]]:
        runs.append(1)
        return real(*args)

    plan = search.plan(pattern, icase) if in_process else None
    entries = _open(files, root)  # search closes them
    sink = safe_helper.Bounded(1 << 30)
    safe_helper.IO.out = out.extend
    safe_helper.rg_events = counted  # type: ignore[assignment]
    try:
        safe_helper.search(entries, "rg", pattern, "", ["-i"] if icase else [], str(ctx), sink,
                           plan)
    finally:
        safe_helper.IO.out = None
        safe_helper.rg_events = real
    return bytes(out), len(runs)


def _events(raw: bytes) -> Iterator[dict[str, Any]]:
    """The events without rg's self-accounting (its clock, the bytes it printed, and the
    summary that covers only the files it searched)."""
    for line in raw.splitlines():
        event = json.loads(line)
        if event["type"] == "summary":
            continue
        stats = event["data"].get("stats")
        if stats is not None:
            stats.pop("elapsed")
            stats.pop("bytes_printed")
        yield event


def _agree(tmp_path: Path, files: dict[str, bytes], pattern: str, icase: bool = False,
           ctx: int = 0) -> int:
    """Both routes' events are the same; the number of rg runs the in-process route took."""
    rg_raw, rg_runs = _route(files, tmp_path, pattern, icase, ctx, in_process=False)
    mine_raw, mine_runs = _route(files, tmp_path, pattern, icase, ctx, in_process=True)
    assert rg_runs == 1
    assert list(_events(mine_raw)) == list(_events(rg_raw)), (pattern, icase, ctx, files)
    assert parse_search(b"\x1eengine rg\n" + mine_raw, 1000) == parse_search(
        b"\x1eengine rg\n" + rg_raw, 1000)
    return mine_runs


TREE = {
    "./a.go": b"package main\n\nfunc greet(name string) string {\n\treturn name\n}\n",
    "./b.txt": b"needle one\nhay\nhay needle needle\nlast needle",
    "./c\nnewline": (b"needle\r\nKelvin \xe2\x84\xaa sharp \xc5\xbf \xc4\xb0 \xc4\xb1 "
                     b"caf\xc3\xa9 needle\n"),
    "./-dash": b"x\n" * 30 + b"needle at 31\n" + b"y\n" * 30,
    "./back\\slash": b"\tneedle\ttabbed\n",
    "./nomatch": b"nothing here\n",
}


@pytest.mark.parametrize("pattern,icase,ctx", [
    ("needle", False, 0), ("needle", True, 2), ("NEEDLE", True, 0), ("func \\w+\\(", False, 1),
    ("ne+dle$", False, 0), ("^hay", False, 1), ("[a-f]e{2}", False, 0), ("k", True, 0),
    ("S", True, 0), ("i", True, 0), ("caf.", False, 0), ("(needle|hay)\\s", False, 3),
    ("[^a-z\\s]", False, 0), ("\\tn", False, 0),
])
def test_both_routes_agree_on_a_tree(tmp_path: Path, pattern: str, icase: bool,
                                     ctx: int) -> None:
    assert search.plan(pattern, icase) is not None
    _agree(tmp_path, TREE, pattern, icase, ctx)


def test_a_plain_tree_takes_no_rg_run(tmp_path: Path) -> None:
    ascii_only = {k: v for k, v in TREE.items() if k != "./c\nnewline"}
    assert _agree(tmp_path, ascii_only, "needle") == 0
    assert _agree(tmp_path, ascii_only, "\\w+dle", ctx=1) == 0
    assert _agree(tmp_path, TREE, "needle", icase=True) == 0


def test_each_files_end_counts_the_bytes_printed_for_it(tmp_path: Path) -> None:
    raw, _ = _route(TREE, tmp_path, "needle", False, 1, in_process=True)
    printed = 0
    ends = 0
    for line in raw.splitlines(keepends=True):
        event = json.loads(line)
        if event["type"] == "end":
            assert event["data"]["stats"]["bytes_printed"] == printed
            ends += 1
        printed = 0 if event["type"] == "end" else printed + len(line)
    assert ends == sum(b"needle" in data for data in TREE.values())


@pytest.mark.parametrize("data", [
    b"needle\0binary\n",  # rg's binary handling
    b"\xef\xbb\xbfneedle\n",  # a byte-order mark: rg transcodes
    b"caf\xe9 needle\n",  # not UTF-8: rg prints raw bytes
    b"needle " + b"x" * (search.MAX_FILE) + b"\n",  # too large
], ids=["nul", "bom", "latin1", "large"])
def test_files_only_rg_answers_exactly_go_to_rg_in_place(tmp_path: Path, data: bytes) -> None:
    files = {"./a": b"needle a\n", "./b": data, "./c": b"needle c\n"}
    assert _agree(tmp_path, files, "needle") == 1


@pytest.mark.parametrize("count", [3, 12])
def test_a_binary_file_among_many_is_searched_as_in_the_whole_batch(tmp_path: Path,
                                                                    count: int) -> None:
    """rg memory-maps a run of at most 10 named files, and then a file with a NUL byte
    answers differently: the files left to rg are searched as the whole batch would be."""
    files = {f"./f{i:02}": b"plain needle\n" for i in range(count)}
    files["./f05"] = b"needle\0bin\n"
    for ctx in (0, 1):
        assert _agree(tmp_path, files, "^PRETTY|needle$", ctx=ctx) == 1


def test_perl_classes_search_non_ascii_files_by_rg(tmp_path: Path) -> None:
    files = {"./a": b"needle 1\n", "./b": "needle \u0661\n".encode()}  # ARABIC-INDIC ONE
    assert _agree(tmp_path, files, "needle \\d") == 1
    assert _agree(tmp_path, files, "needle .") == 0


def test_an_empty_match_goes_to_rg(tmp_path: Path) -> None:
    files = {"./a": b"aaa\nb\n"}
    assert search.plan("a*", False) is not None
    assert _agree(tmp_path, files, "a*") == 1


def test_quadratic_work_beyond_the_budget_goes_to_rg(tmp_path: Path) -> None:
    line = b"a" * 6000 + b"\n"  # (a+)x-style work: 6000^3 > BUDGET
    files = {"./a": b"needle\n", "./b": line}
    assert _agree(tmp_path, files, "a+a+x") == 1


@pytest.mark.parametrize("pattern", [
    "func (", "(?=x)", "(?i)x", "(?P<n>x)", "[[:alpha:]]", "[a&&b]", "\\/", "x{", "{", "a**",
    "a{,3}", "a|", "()", "(a+)+", "[z-a]", "\\n", "x\ny", "\\Ax", "\\pL", "é",
    "\\bone\\b", "\\Bne",  # rg 13 judges a boundary at a previous match's end without context
])
def test_patterns_outside_the_subset_are_left_to_rg(pattern: str) -> None:
    icase = pattern == "é"
    assert search.plan(pattern, icase) is None


def test_the_knob_forces_rg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SANDLOT_GREP_PROCESS", "1")
    assert search.plan("needle", False) is None


_ATOMS = st.sampled_from([
    "a", "b", "k", "s", "K", "i", "e", " ", "_", "1", "-", "é", ".", "\\.", "\\(", "\\t",
    "[a-c]", "[^ab]", "[ks-]", "[-0-9]", "\\d", "\\w", "\\s", "\\S", "\\W", "\\D", "[\\w.]",
])
_TEXT = st.text(alphabet="abkKsSiI é1_ -.(\t\r\n\u212a\u017f\u0130\u0131\u0661", max_size=40)


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    def piece() -> str:
        atom = draw(_ATOMS)
        if draw(st.booleans()):
            atom = "(" + atom + "|" + draw(_ATOMS) + ")"
            return atom + draw(st.sampled_from(["", "?"]))
        return atom + draw(st.sampled_from(["", "", "*", "+", "?", "{2}", "{1,2}", "+?"]))
    parts = [piece() for _ in range(draw(st.integers(1, 4)))]
    return (draw(st.sampled_from(["", "^", "\\b"])) + "".join(parts)
            + draw(st.sampled_from(["", "$", "\\b"])))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pattern=_patterns(), icase=st.booleans(), ctx=st.integers(0, 2),
       texts=st.lists(_TEXT, min_size=1, max_size=3))
def test_any_subset_pattern_agrees_with_rg(tmp_path: Path, pattern: str, icase: bool, ctx: int,
                                           texts: list[str]) -> None:
    if search.plan(pattern, icase) is None:
        return  # rg's own route: nothing to compare
    files = {f"./t{i}": text.encode() for i, text in enumerate(texts)}
    _agree(tmp_path, files, pattern, icase, ctx)
