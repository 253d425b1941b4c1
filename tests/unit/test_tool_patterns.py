"""Glob -> POSIX ERE translation and the regex shorthand rewrite, checked against real grep."""

from __future__ import annotations

import re
import subprocess

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandlot.errors import ToolError
from sandlot.tools.patterns import expand_braces, glob_to_ere, pcre_to_ere
from tests.helpers import require_binary

PATHS = [
    "main.go",
    "main_test.go",
    "cmd/main.go",
    "cmd/tool/x.go",
    "internal/version/version.go",
    "README.md",
    "src/index.ts",
    "src/app.tsx",
    "src/deep/er/util.ts",
    "docs/a.b.md",
    ".hidden/conf.go",
    "a[1].txt",
    "we ird/fi+le(1).go",
]


def select(pattern: str) -> list[str]:
    regex = re.compile(glob_to_ere(pattern))
    return [p for p in PATHS if regex.search(p)]


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.go", ["main.go", "main_test.go", "cmd/main.go", "cmd/tool/x.go",
                  "internal/version/version.go", ".hidden/conf.go", "we ird/fi+le(1).go"]),
        ("**/*.go", ["main.go", "main_test.go", "cmd/main.go", "cmd/tool/x.go",
                     "internal/version/version.go", ".hidden/conf.go", "we ird/fi+le(1).go"]),
        ("/*.go", ["main.go", "main_test.go"]),
        ("./*.go", ["main.go", "main_test.go"]),
        ("cmd/*.go", ["cmd/main.go"]),
        ("cmd/**", ["cmd/main.go", "cmd/tool/x.go"]),
        ("cmd/", ["cmd/main.go", "cmd/tool/x.go"]),
        ("cmd/**/*.go", ["cmd/main.go", "cmd/tool/x.go"]),
        ("src/**/*.{ts,tsx}", ["src/index.ts", "src/app.tsx", "src/deep/er/util.ts"]),
        ("*_test.go", ["main_test.go"]),
        ("main?go", ["main.go", "cmd/main.go"]),
        ("mai?.go/x", []),
        ("main.g?", ["main.go", "cmd/main.go"]),
        ("[mR]*", ["main.go", "main_test.go", "cmd/main.go", "README.md"]),
        ("[!m]*.go", ["cmd/tool/x.go", "internal/version/version.go", ".hidden/conf.go",
                      "we ird/fi+le(1).go"]),
        ("a\\[1\\].txt", ["a[1].txt"]),
        ("a[[]1].txt", ["a[1].txt"]),
        ("*.b.md", ["docs/a.b.md"]),
        ("fi+le(1).go", ["we ird/fi+le(1).go"]),
        ("we ird/*", ["we ird/fi+le(1).go"]),
        ("**", PATHS),
        ("{cmd,internal}/**/*.go", ["cmd/main.go", "cmd/tool/x.go",
                                    "internal/version/version.go"]),
        ("*.{md}", []),  # braces without a comma are literal characters
    ],
)
@pytest.mark.filterwarnings("ignore::FutureWarning")  # Python warns on "[[]"; ERE is fine
def test_glob_selection(pattern: str, expected: list[str]) -> None:
    assert select(pattern) == expected


def test_brace_expansion() -> None:
    assert expand_braces("a{b,c{d,e}}f") == ["abf", "acdf", "acef"]
    assert expand_braces("{x}") == ["{x}"]
    assert expand_braces("a{b") == ["a{b"]
    with pytest.raises(ToolError):
        expand_braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}")


@pytest.mark.parametrize("pattern", ["", "   ", "a\nb"])
def test_bad_globs(pattern: str) -> None:
    with pytest.raises(ToolError):
        glob_to_ere(pattern)


def test_pcre_shorthands_outside_classes_only() -> None:
    assert pcre_to_ere(r"v\d+\.\d") == r"v[0-9]+\.[0-9]"
    assert pcre_to_ere(r"\D") == "[^0-9]"
    assert pcre_to_ere(r"[\d]x\d") == r"[\d]x[0-9]"
    assert pcre_to_ere(r"[]\d]\d") == r"[]\d][0-9]"
    assert pcre_to_ere(r"\w+\s") == r"\w+\s"


_GLOB_ATOMS = st.sampled_from(
    ["*", "**", "?", "a", "b", ".", "go", "/", "{a,b}", "[ab]", "[!a]", "+", "(", ")", "|",
     "$", "^", "\\*", "x y"]
)
_NAMES = st.lists(st.sampled_from(["a", "b", "a.go", "b.go", "ab", ".x", "a+b", "(a)", "a|b",
                                   "$a", "^b", "*", "x y"]), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(pattern=st.lists(_GLOB_ATOMS, min_size=1, max_size=6).map("".join),
       paths=st.lists(_NAMES.map("/".join), min_size=1, max_size=8))
def test_real_grep_E_agrees_with_python_on_the_ere(pattern: str, paths: list[str]) -> None:
    """The ERE we send is valid for grep -E and selects what we mean it to select."""
    grep = require_binary("grep")
    try:
        ere = glob_to_ere(pattern)
    except ToolError:
        return
    expected = [p for p in paths if re.search(ere, p)]
    run = subprocess.run([grep, "-E", "-e", ere], input="\n".join(paths) + "\n",
                         capture_output=True, text=True, check=False)
    assert run.returncode in (0, 1), run.stderr
    assert run.stdout.splitlines() == expected
