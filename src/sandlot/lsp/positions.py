"""Positions between the model's words and the server's: pure functions over a file's text.

The model counts 1-based lines and 1-based columns in characters (Unicode code points), as an
editor shows them; LSP counts 0-based lines and 0-based columns in UTF-16 code units (the
protocol's default encoding, the only one every server here speaks). A character outside the
Basic Multilingual Plane (an emoji, many CJK extensions) is one column to the model and two
units to the server, so every position crosses this module.
"""

from __future__ import annotations

import itertools
from typing import Any

from ..errors import ToolError

#: A file's lines (lines_of): immutable, since one split is shared by every caller.
Lines = tuple[str, ...]

#: The lines of texts split recently, by text. A warm request maps its answer with the lines of
#: the same few files every call (read again, equal text): splitting them again was a tenth of
#: the host's work per call (bench/lsp_bench.py). Bounded by the characters kept.
_SPLIT: dict[str, Lines] = {}
_SPLIT_LIMIT = 8 << 20
_split_kept = 0


def lines_of(text: str) -> Lines:
    """The file's lines as LSP sees them (split at \\n; a \\r before it stays out of reach of
    a column, since no server puts a position after it)."""
    global _split_kept
    lines = _SPLIT.get(text)
    if lines is None:
        lines = tuple(text.split("\n"))
        if len(text) <= _SPLIT_LIMIT // 4:
            while _SPLIT and _split_kept + len(text) > _SPLIT_LIMIT:
                oldest = next(iter(_SPLIT))
                del _SPLIT[oldest]
                _split_kept -= len(oldest)
            _SPLIT[text] = lines
            _split_kept += len(text)
    return lines


def to_utf16(line_text: str, column: int) -> int:
    """0-based UTF-16 offset of 1-based code-point `column` in `line_text` (a column one past
    the end is the line's end, where an insertion goes)."""
    prefix = line_text[: max(column - 1, 0)]
    if prefix.isascii():  # most source lines: one unit a character
        return len(prefix)
    return sum(2 if ord(ch) > 0xFFFF else 1 for ch in prefix)


def from_utf16(line_text: str, units: int) -> int:
    """1-based code-point column of 0-based UTF-16 offset `units` in `line_text` (an offset in
    the middle of a surrogate pair lands on that character)."""
    if line_text.isascii():  # most source lines: one unit a character
        return max(0, min(units, len(line_text))) + 1
    seen = 0
    for index, ch in enumerate(line_text):
        if seen >= units:
            return index + 1
        seen += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text) + 1


def to_lsp(text: str, line: int, column: int, *, path: str) -> dict[str, int]:
    """The LSP position of the model's (line, column), checked against the file."""
    lines = lines_of(text)
    if line < 1 or line > len(lines):
        raise ToolError(f"{path} has {len(lines)} lines; line {line} is out of range "
                        "(lines count from 1)")
    line_text = lines[line - 1].rstrip("\r")
    if column < 1 or column > len(line_text) + 1:
        raise ToolError(f"{path}:{line} has {len(line_text)} characters; column {column} is "
                        "out of range (columns count characters from 1)")
    return {"line": line - 1, "character": to_utf16(line_text, column)}


def from_lsp(lines: Lines, position: dict[str, int]) -> tuple[int, int]:
    """The model's (line, column) of an LSP position (past the end: clamped to the end)."""
    line = int(position.get("line", 0))
    units = int(position.get("character", 0))
    if line >= len(lines):
        return line + 1, 1
    return line + 1, from_utf16(lines[line], units)


def span_of(lines: Lines, rng: dict[str, Any]) -> tuple[int, int, int, int]:
    """The model's (line, column, end line, end column) of an LSP range: from_lsp of both
    ends in one call (an answer's every location goes through here, on every call)."""
    start, end = rng.get("start", {}), rng.get("end", {})
    line, units = int(start.get("line", 0)), int(start.get("character", 0))
    end_line, end_units = int(end.get("line", 0)), int(end.get("character", 0))
    count = len(lines)
    column = from_utf16(lines[line], units) if line < count else 1
    end_column = from_utf16(lines[end_line], end_units) if end_line < count else 1
    return line + 1, column, end_line + 1, end_column


def offset_of(lines: Lines, position: dict[str, int]) -> int:
    """The index into the text (code points) of an LSP position: where an edit applies."""
    line = min(int(position.get("line", 0)), len(lines))
    start = sum(len(text) + 1 for text in lines[:line])
    if line == len(lines):
        return start - 1 if lines else 0
    column = from_utf16(lines[line], int(position.get("character", 0)))
    return start + column - 1


def apply_edits(text: str, edits: list[dict[str, object]]) -> str:
    """`text` with LSP TextEdits applied. Their ranges refer to the original text and do not
    overlap (the protocol says so); applied from the last to the first, so earlier offsets
    stay valid."""
    lines = lines_of(text)
    spans: list[tuple[int, int, str]] = []
    for edit in edits:
        rng = edit["range"]
        assert isinstance(rng, dict)
        start = offset_of(lines, rng["start"])
        end = offset_of(lines, rng["end"])
        spans.append((start, end, str(edit.get("newText", ""))))
    spans.sort(key=lambda span: (span[0], span[1]))
    for (_, end, _), (start, _, _) in itertools.pairwise(spans):
        if start < end:
            raise ToolError("the language server sent overlapping edits for one file; nothing "
                            "was changed")
    for start, end, new in reversed(spans):
        text = text[:start] + new + text[end:]
    return text
