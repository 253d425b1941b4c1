"""The README's benchmark table is generated from the committed full run and stays a table:
a `|` inside a cell (`tar | tar x`) is escaped, so every row has exactly eight cells."""

from __future__ import annotations

import json
import re

from bench.__main__ import RESULTS
from bench.readme_table import machine_line, table


def test_every_row_of_the_committed_run_has_eight_cells() -> None:
    report = json.loads((RESULTS / "latest.json").read_text())
    rows = table(report).splitlines()
    assert len(rows) == 2 + len(report["measurements"])
    piped = 0
    for row in rows:
        cells = re.split(r"(?<!\\)\|", row)[1:-1]
        assert len(cells) == 8, row
        piped += "\\|" in row
    assert piped > 0  # the raw tar pipes are there, escaped
    assert f"{report['machine']['cpus']} vCPUs" in machine_line(report)


def test_the_readme_shows_the_committed_run() -> None:
    report = json.loads((RESULTS / "latest.json").read_text())
    readme = (RESULTS.parent.parent / "README.md").read_text()
    assert table(report) in readme
    assert machine_line(report) in readme
