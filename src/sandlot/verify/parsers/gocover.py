"""`go test -coverprofile` profiles -> line hits.

A profile line is `import/path/file.go:L0.C0,L1.C1 statements count` (after a `mode:` line).
Go measures statement blocks; a block stands for every line from its first to its last, and a
line counts as run when any block on it ran (one block may end where a run one starts). Blocks
without statements are not code. A package tested twice (several -coverpkg runs) repeats
blocks: the counts of one block are added up.
"""

from __future__ import annotations

import re

from ..coverage import LineHits

_BLOCK = re.compile(r"^(.+):(\d+)\.\d+,(\d+)\.\d+ (\d+) (\d+)$")


def parse(profile: str, *, module: str) -> LineHits:
    """Line hits per file, files relative to the module root (`calc/calc.go`) when they are
    in `module`, else as the profile names them (import path + file)."""
    blocks: dict[str, tuple[str, int, int, int]] = {}
    for raw in profile.splitlines():
        match = _BLOCK.match(raw.strip())
        if match is None:
            continue  # the mode: line, or a blank one
        name, first, last, statements, count = match.groups()
        if int(statements) == 0:
            continue
        where = raw.strip().split(" ", 1)[0]
        seen = blocks.get(where, ("", 0, 0, 0))[3]
        blocks[where] = (_relative(name, module), int(first), int(last), seen + int(count))
    hits: LineHits = {}
    for name, first, last, count in blocks.values():
        lines = hits.setdefault(name, {})
        for line in range(first, last + 1):
            lines[line] = max(lines.get(line, 0), count)
    return hits


def _relative(name: str, module: str) -> str:
    if module and name.startswith(module + "/"):
        return name[len(module) + 1 :]
    return name
