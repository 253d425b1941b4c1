"""The toolbox's exit codes have one table, `scripts.Exit`: the sh scripts are filled in from it
and the race-free helper (which runs without sandlot, so cannot import it) must agree with it.

Python turns a code into a typed error (`Toolbox._fail`); a script or the helper that said 74
where the table says 75 would give the agent the wrong error, with no other test noticing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from sandlot.tools import safe_helper, scripts
from sandlot.tools.scripts import Exit

SCRIPTS = ["PRELUDE", "RESOLVE", "DISCARD", "READ", "SLURP", "WRITE", "GLOB", "GREP", "FETCH",
           "LIST"]


def helper_codes(source: str) -> dict[str, int]:
    """The helper's module-level integer constants in our range (70-89), by name, parsed from
    its source (the text that is sent into the sandbox)."""
    found: dict[str, int] = {}
    for node in ast.parse(source).body:
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = (node.value.elts if isinstance(node.value, ast.Tuple)
                      else [node.value] * len(names))
            for name, value in zip(names, values, strict=True):
                if (isinstance(name, ast.Name) and isinstance(value, ast.Constant)
                        and isinstance(value.value, int) and 70 <= value.value <= 89):
                    found[name.id] = value.value
    return found


def test_the_helper_has_exactly_the_tables_codes() -> None:
    source = Path(safe_helper.__file__).read_text()
    assert helper_codes(source) == {e.name: int(e) for e in Exit}


def test_the_helper_raises_only_named_codes() -> None:
    # `Fail(74, ...)` with a bare number would escape the check above.
    source = Path(safe_helper.__file__).read_text()
    assert not re.findall(r"Fail\(\s*\d", source)


def test_the_scripts_take_every_code_from_the_table() -> None:
    source = Path(scripts.__file__).read_text()
    # No literal code is written in a script: each is `fail @NAME@`.
    assert not re.findall(r"\bfail [0-9]", source)
    used: set[int] = set()
    for name in SCRIPTS:
        text = getattr(scripts, name)
        assert not re.search(r"@[A-Z_]+@", text), f"{name} has an unfilled code"
        codes = {int(c) for c in re.findall(r"\bfail ([0-9]+)", text)}
        assert codes <= {int(e) for e in Exit}, name
        used |= codes
    # Every code of the table is raised by some script (or the table has a dead entry).
    assert used == {int(e) for e in Exit}


def test_an_unknown_code_name_fails_at_import() -> None:
    with pytest.raises(KeyError):
        scripts._codes("fail @NO_SUCH_CODE@ x")


def test_every_code_but_grep_s_own_has_its_typed_error() -> None:
    # BAD_PATTERN is grep's, which words it itself; every other code has an entry in the table
    # `Toolbox._fail` reads, and every entry formats with the fields `_fail` gives it.
    from sandlot.tools.file_tools import FAILURES

    assert set(FAILURES) == set(Exit) - {Exit.BAD_PATTERN}
    fields = dict(tool="read", rel="a", where='workspace "w"', name="w", root="/w", path="a",
                  detail="d", stderr="e", edit_bytes=1)
    for _, message in FAILURES.values():
        assert "{" not in message.format(**fields)
