"""WorkspaceSet parsing, the selection policy (exact strings) and lexical path containment."""

from __future__ import annotations

import os
import posixpath
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandlot.errors import (
    ConfigurationError,
    InvalidPathError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)
from sandlot.workspaces import Workspace, WorkspaceSet, contain_path, fold_lookalikes

TWO = "primary=/w/svc,extension=/w/lib"
NOT_CHOSEN = (
    "multi-workspace sandbox: 2 workspaces configured (extension, primary) — pass `workspace` "
    "to pick one"
)
UNKNOWN = 'unknown workspace "frontend"; configured: extension, primary'


# ---- parsing ----------------------------------------------------------------------------


def test_parse_operator_form_keeps_order_and_roots() -> None:
    ws = WorkspaceSet.parse(TWO)
    assert [(w.name, w.root) for w in ws] == [("primary", "/w/svc"), ("extension", "/w/lib")]
    assert ws.names == ["extension", "primary"]
    assert ws.describe() == "2 workspaces configured (extension, primary)"


def test_parse_tolerates_whitespace_trailing_comma_and_bare_paths() -> None:
    ws = WorkspaceSet.parse("  primary = /w/svc/ ,\n /workspaces/promptkit , ")
    assert [(w.name, w.root) for w in ws] == [
        ("primary", "/w/svc"),
        ("promptkit", "/workspaces/promptkit"),
    ]


def test_bare_path_is_named_by_its_basename_after_normalising() -> None:
    assert WorkspaceSet.parse("/a/b/../repo/").names == ["repo"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("a=/w/x,a=/w/y", 'duplicate workspace name "a" in \'a=/w/x,a=/w/y\'; name the entries '
                          "apart with name=path"),
        ("/w/x/repo,/v/repo", 'duplicate workspace name "repo" in \'/w/x/repo,/v/repo\'; name '
                              "the entries apart with name=path"),
        ("a=rel/path", 'workspace "a": root \'rel/path\' is not absolute; workspace roots are '
                       "absolute paths inside the sandbox (e.g. /workspaces/svc)"),
        ("rel/path", 'workspace "path": root \'rel/path\' is not absolute; workspace roots are '
                     "absolute paths inside the sandbox (e.g. /workspaces/svc)"),
        ("", 'no workspaces configured; give at least one, e.g. "primary=/workspaces/svc"'),
        (" , ,", 'no workspaces configured; give at least one, e.g. "primary=/workspaces/svc"'),
        ("/", "cannot name workspace '/' after its last path component; write it as name=/"),
        ("a=/w,b=/w/b", 'workspace roots overlap: "a" (/w) and "b" (/w/b); roots must not '
                        "contain one another, or one workspace could reach the other's files"),
        ("a=/w,b=/w/", 'workspace roots overlap: "a" (/w) and "b" (/w); roots must not contain '
                       "one another, or one workspace could reach the other's files"),
        ("=/w", "invalid workspace name '' in entry '=/w': names are non-empty and hold no "
                "',', '=', '/', whitespace or control characters (and are not '.' or '..')"),
        ("a b=/w", "invalid workspace name 'a b' in entry 'a b=/w': names are non-empty and "
                   "hold no ',', '=', '/', whitespace or control characters (and are not '.' "
                   "or '..')"),
    ],
)
def test_parse_rejects_bad_sets(spec: str, message: str) -> None:
    with pytest.raises(WorkspaceError) as info:
        WorkspaceSet.parse(spec)
    assert str(info.value) == message
    assert isinstance(info.value, ConfigurationError)


def test_mapping_form_and_round_trip() -> None:
    ws = WorkspaceSet({"primary": "/w/svc", "extension": "/w/lib"})
    assert ws == WorkspaceSet.parse(TWO) == WorkspaceSet.parse(ws.to_spec())
    assert WorkspaceSet.from_mapping({"x": "/x"}).resolve() == "/x"
    assert "primary" in ws and "frontend" not in ws and len(ws) == 2


def test_coerce_accepts_every_user_form() -> None:
    expected = WorkspaceSet.parse(TWO)
    assert WorkspaceSet.coerce(TWO, default_root="/") == expected
    assert WorkspaceSet.coerce(expected, default_root="/") is expected
    assert WorkspaceSet.coerce({"primary": "/w/svc", "extension": "/w/lib"},
                               default_root="/") == expected
    single = WorkspaceSet.coerce(None, default_root="/tmp/sandlot-abc")
    assert [(w.name, w.root) for w in single] == [("sandlot-abc", "/tmp/sandlot-abc")]


# ---- choosing a root (fixed strings agents switch on) ----------------------------------


def test_omitted_with_one_workspace_uses_it() -> None:
    ws = WorkspaceSet.parse("/w/svc")
    assert ws.choose() == Workspace("svc", "/w/svc")
    assert ws.choose("  ") == Workspace("svc", "/w/svc")
    assert ws.resolve(None) == "/w/svc"


@pytest.mark.parametrize("name", [None, "", "   "])
def test_omitted_with_several_fails_with_the_exact_message(name: str | None) -> None:
    with pytest.raises(WorkspaceError) as info:
        WorkspaceSet.parse(TWO).choose(name)
    assert str(info.value) == NOT_CHOSEN


def test_unknown_name_fails_with_the_exact_message() -> None:
    with pytest.raises(WorkspaceError) as info:
        WorkspaceSet.parse(TWO).resolve("frontend")
    assert str(info.value) == UNKNOWN


def test_names_are_trimmed_and_case_sensitive() -> None:
    ws = WorkspaceSet.parse(TWO)
    assert ws.resolve("  primary\t") == "/w/svc"
    with pytest.raises(WorkspaceError) as info:
        ws.choose("Primary")
    assert str(info.value) == 'unknown workspace "Primary"; configured: extension, primary'


def test_names_are_listed_sorted_whatever_the_order_given() -> None:
    ws = WorkspaceSet.parse("zeta=/z,alpha=/a,mid=/m")
    with pytest.raises(WorkspaceError) as info:
        ws.choose()
    assert str(info.value) == (
        "multi-workspace sandbox: 3 workspaces configured (alpha, mid, zeta) — pass "
        "`workspace` to pick one"
    )


# ---- lexical containment -----------------------------------------------------------------


ROOT = "/w/svc"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("main.go", "/w/svc/main.go"),
        ("./cmd//x/./y.go", "/w/svc/cmd/x/y.go"),
        ("cmd/../main.go", "/w/svc/main.go"),
        ("", "/w/svc"),
        (".", "/w/svc"),
        ("/w/svc", "/w/svc"),
        ("/w/svc/internal/v.go", "/w/svc/internal/v.go"),
        ("//w//svc/a", "/w/svc/a"),
        ("a\uff0fb", "/w/svc/a\uff0fb"),  # a fullwidth solidus that stays inside is a name
        ("\u2024hidden", "/w/svc/\u2024hidden"),
        ("...", "/w/svc/..."),
        ("/etc/../w/svc/a", "/w/svc/a"),  # never inside the root until the end: no exit
    ],
)
def test_paths_inside_the_root(path: str, expected: str) -> None:
    assert contain_path(ROOT, path) == expected


ESCAPES = [
    "..",
    "../",
    "../lib/package.json",
    "../../etc/passwd",
    "/etc/passwd",
    "/w/lib/index.js",
    "/w/svc-evil/x",
    "/w",
    "/",
    "src/../../lib/x",
    "a/b/../../../x",
    "a/./../..",
    "../svc/main.go",  # leaves the root, then comes back: the walk itself escaped
    "/w/svc/../svc/main.go",
    "\uff0e\uff0e\uff0flib/package.json",  # fullwidth full stops and solidus
    "\u2024\u2024/lib",  # one dot leaders
    "\u2025/lib",  # two dot leader
    "..\u2215lib",  # division slash
    "..\u2044lib",  # fraction slash
    "a\uff0f\u2024\u2024\uff0f\u2024\u2024\uff0fetc",
    "\ufe52\ufe52/x",  # small full stops
]


@pytest.mark.parametrize("path", ESCAPES)
def test_escapes_are_refused(path: str) -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        contain_path(ROOT, path, workspace="primary")
    message = str(info.value)
    assert f'path "{path}"' in message
    assert 'workspace "primary" (root /w/svc)' in message


def test_lookalike_message_names_the_reading() -> None:
    with pytest.raises(PathOutsideWorkspaceError) as info:
        contain_path(ROOT, "\u2024\u2024\uff0fetc", workspace="primary")
    assert str(info.value) == (
        'path "\u2024\u2024\uff0fetc" uses characters that look like "/" or "." and reads as '
        '"../etc", which is outside workspace "primary" (root /w/svc); write the path with '
        "plain characters"
    )


@pytest.mark.parametrize("path", ["a\x00b", "a\nb", "\x7f"])
def test_control_characters_are_refused(path: str) -> None:
    with pytest.raises(InvalidPathError):
        contain_path(ROOT, path)


def test_root_slash_contains_everything() -> None:
    assert contain_path("/", "../../etc") == "/etc"


def test_fold_lookalikes() -> None:
    assert fold_lookalikes("\uff0e\uff0e\uff0f\u2025\u2215x") == "../../x"


def test_relative_display() -> None:
    w = Workspace("primary", "/w/svc")
    assert w.relative("/w/svc") == "."
    assert w.relative("/w/svc/a/b") == "a/b"


# ---- the property: nothing generated resolves outside its root ---------------------------

_COMPONENTS = st.sampled_from(
    ["..", ".", "", "a", "b", "svc", "w", "lib", "...", "\u2024\u2024", "\uff0e\uff0e",
     "\u2025", "..\uff0f..", "x\u2215..", "svc-evil", "..a", "a.."]
)
_PATHS = st.builds(
    lambda lead, parts: lead + "/".join(parts),
    st.sampled_from(["", "/", "./", "//", "/w/svc/", "/w/"]),
    st.lists(_COMPONENTS, max_size=10),
)


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


@settings(max_examples=500, deadline=None)
@given(path=_PATHS, root=st.sampled_from(["/w/svc", "/", "/a", "/w/svc/deep/er"]))
def test_no_generated_path_resolves_outside_its_root(path: str, root: str) -> None:
    try:
        resolved = contain_path(root, path)
    except PathOutsideWorkspaceError:
        return
    # The answer is inside the root, normalised, and the look-alike reading is too.
    assert _inside(resolved, root)
    assert resolved == posixpath.normpath(resolved) or resolved == "/"
    folded = fold_lookalikes(path)
    assert _inside(posixpath.normpath(posixpath.join(root, folded)).replace("//", "/"), root)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from(["..", ".", "a", "b", "c"]), max_size=8))
def test_the_lexical_answer_matches_the_host_file_system(
    parts: list[str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """With real directories and no symlinks, the kernel agrees with the pure resolver."""
    base = tmp_path_factory.getbasetemp() / "lexical"
    root = base / "root"
    for d in ("a/b/c", "a/c", "b"):
        (root / d).mkdir(parents=True, exist_ok=True)
    rel = "/".join(parts)
    real_root = os.path.realpath(root)
    try:
        resolved = contain_path(real_root, rel)
    except PathOutsideWorkspaceError:
        return
    on_disk = os.path.normpath(os.path.join(real_root, rel))
    assert resolved == on_disk or not Path(on_disk).exists()
    assert _inside(resolved, real_root)
