"""One navigation case per language, over its fixture project (tests/fixtures/lsp/<name>):
each project has a store whose `get` method shares its name with a cache's `get` and with a
standard-library method called in the same files, which a grep for the call cannot tell apart.

Positions are 1-based lines and columns in characters, as the model gives them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    language: str
    fixture: str
    definition_at: tuple[str, int, int]
    """A call of the store's get in another file or package ..."""
    definition: tuple[str, int]
    """... and where that method is defined (path, line)."""
    symbol: str
    """The method's name as a model would write it (`Store.Get`)."""
    references_at: tuple[str, int, int]
    references: frozenset[tuple[str, int]]
    """Every reference to the store's get, declaration included (path, line)."""
    grep: str
    """What an agent without a language server greps for."""
    hover_at: tuple[str, int, int]
    hover: str
    """Text the hover of the variable holding the price must show (its type)."""
    new_name: str
    check: str
    """Builds and tests the project (exit 0) after the rename."""
    planted: tuple[str, str, int]
    """(path, content, line): a file with one type error, and the error's line."""


GO = Case(
    language="go",
    fixture="go",
    definition_at=("cmd/shop/main.go", 17, 18),
    definition=("store/store.go", 25),
    symbol="Store.Get",
    references_at=("store/store.go", 25, 17),
    references=frozenset({("store/store.go", 25), ("cmd/shop/main.go", 17),
                          ("store/store_test.go", 8), ("store/store_test.go", 11)}),
    grep=r"\.Get\(",
    hover_at=("cmd/shop/main.go", 17, 2),
    hover="var cents int",
    new_name="Fetch",
    check="go build ./... && go vet ./... && go test -count=1 ./...",
    planted=("planted/planted.go", 'package planted\n\n// Half is wrong on purpose.\n'
             'func Half(n int) int {\n\treturn "half"\n}\n', 5),
)

PYTHON = Case(
    language="python",
    fixture="python",
    definition_at=("shop/main.py", 16, 23),
    definition=("shop/store.py", 20),
    symbol="Store.get",
    references_at=("shop/store.py", 20, 9),
    references=frozenset({("shop/store.py", 20), ("shop/main.py", 16),
                          ("tests/test_store.py", 9), ("tests/test_store.py", 11)}),
    grep=r"\.get\(",
    hover_at=("shop/main.py", 16, 9),
    hover="cents: int",
    new_name="fetch",
    check="python3 -m pytest -q -p no:cacheprovider",
    planted=("shop/planted.py", '"""Wrong on purpose."""\n\n\ndef half(n: int) -> int:\n'
             '    return "half"\n', 5),
)

NODE = Case(
    language="node",
    fixture="node",
    definition_at=("src/price.ts", 10, 23),
    definition=("src/store.ts", 11),
    symbol="Store.get",
    references_at=("src/store.ts", 11, 3),
    references=frozenset({("src/store.ts", 11), ("src/price.ts", 10)}),
    grep=r"\.get\(",
    hover_at=("src/price.ts", 10, 9),
    hover="const cents: number | undefined",
    new_name="fetch",
    check="npm test --silent",
    planted=("src/planted.ts", "// Wrong on purpose.\nexport function half(n: number): number {\n"
             '  return "half";\n}\n', 3),
)

RUST = Case(
    language="rust",
    fixture="rust",
    definition_at=("src/lib.rs", 15, 29),
    definition=("src/store.rs", 18),
    symbol="Store.get",
    references_at=("src/store.rs", 18, 12),
    references=frozenset({("src/store.rs", 18), ("src/lib.rs", 15), ("src/lib.rs", 33)}),
    grep=r"\.get\(",
    hover_at=("src/lib.rs", 15, 9),
    hover="let cents: u32",
    new_name="fetch",
    check="cargo build -q && cargo test -q",
    planted=("src/extra.rs", '//! Room for more.\n\n/// Wrong on purpose.\n'
             'pub fn half(cents: u32) -> u32 {\n    "half"\n}\n', 5),
)

CASES: dict[str, Case] = {case.language: case for case in (GO, PYTHON, NODE, RUST)}
