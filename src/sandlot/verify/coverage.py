"""Line coverage as `run_tests(coverage=True)` reports it, whatever tool measured it.

Every coverage parser turns its tool's machine format into the same thing, `LineHits`: per file
(relative to the workspace root), each line the tool counts as executable and how often it ran.
`summarize` makes the report from that: per file and in total, lines, covered, percent, and the
uncovered lines as ranges. A line is one the tool counts: statements for coverage.py and
istanbul, every line of a Go statement block, the traced lines of tarpaulin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field, computed_field

#: file -> {line: times it ran} (0: executable, never ran).
LineHits = dict[str, dict[int, int]]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _percent(covered: int, lines: int) -> float:
    # Nothing to cover is all covered (istanbul's json-summary says 100 too).
    return 100.0 if lines == 0 else round(100.0 * covered / lines, 2)


class FileCoverage(_Model):
    """One file's line coverage."""

    file: str
    """Path relative to the workspace root (absolute only outside it)."""
    lines: int
    """Lines the tool counts as executable."""
    covered: int
    """Of those, the lines that ran at least once."""
    uncovered: list[tuple[int, int]] = Field(default_factory=list)
    """The executable lines that never ran, as inclusive ranges (first, last) of consecutive
    line numbers, in order: exactly those lines, nothing between them."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def percent(self) -> float:
        return _percent(self.covered, self.lines)


class Coverage(_Model):
    """Line coverage of one test run: per file, and the total."""

    tool: str
    """What measured it: go-cover, coverage.py, c8, jest, vitest, tarpaulin."""
    files: list[FileCoverage] = Field(default_factory=list)
    """Sorted by path."""
    lines: int = 0
    covered: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def percent(self) -> float:
        return _percent(self.covered, self.lines)


def ranges(lines: Iterable[int]) -> list[tuple[int, int]]:
    """`lines` as inclusive ranges of consecutive numbers, in order."""
    out: list[tuple[int, int]] = []
    for line in sorted(set(lines)):
        if out and out[-1][1] + 1 == line:
            out[-1] = (out[-1][0], line)
        else:
            out.append((line, line))
    return out


def summarize(tool: str, hits: Mapping[str, Mapping[int, int]]) -> Coverage:
    """The report of `hits` (see the module docstring). Pure."""
    files = []
    for name in sorted(hits):
        lines = hits[name]
        missed = [line for line, count in lines.items() if count == 0]
        files.append(FileCoverage(
            file=name, lines=len(lines), covered=len(lines) - len(missed),
            uncovered=ranges(missed),
        ))
    return Coverage(tool=tool, files=files, lines=sum(f.lines for f in files),
                    covered=sum(f.covered for f in files))
