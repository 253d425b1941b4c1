"""Positions between the model (1-based lines, columns in characters) and LSP (0-based, UTF-16
code units): characters outside the BMP count once for the model and twice for the server."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandlot.errors import ToolError
from sandlot.lsp.positions import (
    apply_edits,
    from_lsp,
    from_utf16,
    lines_of,
    span_of,
    to_lsp,
    to_utf16,
)

TEXT = 'package main\n\tx := "\U0001f375\U0001f375"; y := caf\u00e9(x)\n'


def test_a_column_after_astral_characters_counts_them_once_for_the_model() -> None:
    line = lines_of(TEXT)[1]
    column = line.index("caf") + 1
    where = to_lsp(TEXT, 2, column, path="main.go")
    assert where == {"line": 1, "character": column - 1 + 2}  # two emoji: one unit more each
    assert from_lsp(lines_of(TEXT), where) == (2, column)


def test_the_end_of_a_line_and_out_of_range_positions() -> None:
    line = lines_of(TEXT)[1]
    assert to_lsp(TEXT, 2, len(line) + 1, path="m")["character"] == len(line) + 2
    with pytest.raises(ToolError, match="column 99 is out of range"):
        to_lsp(TEXT, 2, 99, path="m")
    with pytest.raises(ToolError, match="line 9 is out of range"):
        to_lsp(TEXT, 9, 1, path="m")
    with pytest.raises(ToolError, match="line 0 is out of range"):
        to_lsp(TEXT, 0, 1, path="m")


def test_edits_apply_from_the_last_and_keep_astral_characters() -> None:
    line = lines_of(TEXT)[1]
    start = line.index("caf")
    units = start + 2
    edits = [
        {"range": {"start": {"line": 1, "character": units},
                   "end": {"line": 1, "character": units + 4}}, "newText": "tea"},
        {"range": {"start": {"line": 0, "character": 8}, "end": {"line": 0, "character": 12}},
         "newText": "shop"},
    ]
    assert apply_edits(TEXT, edits) == ('package shop\n\tx := "\U0001f375\U0001f375"; '
                                        'y := tea(x)\n')


def test_overlapping_edits_are_refused() -> None:
    same = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 4}}
    with pytest.raises(ToolError, match="overlapping"):
        apply_edits(TEXT, [{"range": same, "newText": "a"}, {"range": same, "newText": "b"}])


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _units_to_column(line_text: str, units: int) -> int:
    """The first column whose prefix spans `units` UTF-16 units, by the codec itself."""
    for index in range(len(line_text) + 1):
        if _utf16_units(line_text[:index]) >= units:
            return index + 1
    return len(line_text) + 1


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(alphabet=st.characters(max_codepoint=0x7F)), st.text()),
       st.integers(min_value=-2, max_value=60))
def test_ascii_lines_take_the_short_way_to_the_same_columns(line_text: str, n: int) -> None:
    assert from_utf16(line_text, n) == _units_to_column(line_text, n)
    assert to_utf16(line_text, n) == _utf16_units(line_text[: max(n - 1, 0)])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab\n\u00e9\U0001f375")),
       st.lists(st.integers(min_value=0, max_value=8), min_size=4, max_size=4))
def test_a_range_maps_as_its_two_ends_do(text: str, at: list[int]) -> None:
    lines = lines_of(text)
    start = {"line": at[0], "character": at[1]}
    end = {"line": at[2], "character": at[3]}
    assert span_of(lines, {"start": start, "end": end}) == (*from_lsp(lines, start),
                                                            *from_lsp(lines, end))
