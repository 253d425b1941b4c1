"""glob and grep on both engines (ripgrep, and the forced portable fallback), bounded output."""

from __future__ import annotations

import pytest

from sandlot import Sandbox
from sandlot.errors import ToolError
from sandlot.tools import GrepLine, Toolbox
from sandlot.workspaces import WorkspaceSet

pytestmark = pytest.mark.anyio


@pytest.fixture
async def extra(sandbox: Sandbox, workspaces: WorkspaceSet) -> None:
    """Files the excludes, binary detection and bounds act on."""
    await sandbox.exec(
        "mkdir -p node_modules/dep .git/objects src/deep && "
        "echo 'export const greet = 1' > node_modules/dep/index.js && "
        "echo 'greet' > .git/objects/x.js && "
        "printf 'greet\\000binary' > src/blob.bin && "
        "for i in 1 2 3 4 5 6 7; do echo \"export const v$i = $i; // greet\" > src/deep/m$i.js; "
        "done && echo 'const hidden = 1' > .eslintrc.js",
        cwd=workspaces.resolve("extension"), check=True,
    )


async def test_glob_patterns(search_box: Toolbox, extra: None,
                             engines: tuple[str, str]) -> None:
    box = search_box
    every_js = await box.glob("*.js", workspace="extension")
    assert every_js.engine == engines[0]
    # Hidden files are listed; .git and node_modules are skipped.
    assert every_js.paths == [".eslintrc.js", "index.js"] + [
        f"src/deep/m{i}.js" for i in range(1, 8)] + ["test/index.test.js"]
    top = await box.glob("/*.js", workspace="extension")
    assert top.paths == [".eslintrc.js", "index.js"]
    braces = await box.glob("{test,src/deep}/*{1,2,test}.js", workspace="extension")
    assert braces.paths == ["src/deep/m1.js", "src/deep/m2.js", "test/index.test.js"]
    under = await box.glob("*.js", path="src", workspace="extension")
    assert under.paths == [f"src/deep/m{i}.js" for i in range(1, 8)]
    inside_excluded = await box.glob("*.js", path="node_modules", workspace="extension")
    assert inside_excluded.paths == ["node_modules/dep/index.js"]
    none = await box.glob("*.rs", workspace="extension")
    assert (none.paths, none.text) == ([], "(no files match '*.rs' in .)")


async def test_glob_output_is_bounded_with_a_note(sandbox: Sandbox, workspaces: WorkspaceSet,
                                                  extra: None, use_ripgrep: bool) -> None:
    box = Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep, max_results=3)
    cut = await box.glob("**/*.js", workspace="extension")
    assert cut.paths == [".eslintrc.js", "index.js", "src/deep/m1.js"]
    assert (cut.total, cut.truncated) == (10, True)
    assert cut.text.splitlines()[-1] == (
        "[showing the first 3 of 10 files by name; narrow the pattern or the path]"
    )


async def test_grep_finds_lines_with_context(search_box: Toolbox, extra: None,
                                             engines: tuple[str, str]) -> None:
    found = await search_box.grep("Sprintf|Println", context=1, workspace="primary")
    assert found.engine == engines[1]
    assert found.lines == [
        GrepLine(path="main.go", line=9, text="func greet(name string) string {", match=False),
        GrepLine(path="main.go", line=10, text='\treturn fmt.Sprintf("hello, %s (svc %s)", '
                 "name, version.Version)"),
        GrepLine(path="main.go", line=11, text="}", match=False),
        GrepLine(path="main.go", line=13, text="func main() {", match=False),
        GrepLine(path="main.go", line=14, text='\tfmt.Println(greet("world"))'),
        GrepLine(path="main.go", line=15, text="}", match=False),
    ]
    assert found.text == (
        "main.go-9-func greet(name string) string {\n"
        'main.go:10:\treturn fmt.Sprintf("hello, %s (svc %s)", name, version.Version)\n'
        "main.go-11-}\n"
        "--\n"
        "main.go-13-func main() {\n"
        'main.go:14:\tfmt.Println(greet("world"))\n'
        "main.go-15-}"
    )


async def test_grep_without_context_prints_no_separators(search_box: Toolbox,
                                                          extra: None) -> None:
    """Issue 26.11: with context=0 a `--` line stood between matches that are not adjacent,
    spending tokens on nothing."""
    found = await search_box.grep("Sprintf|Println|greet", workspace="primary")
    assert found.text == (
        "main.go:9:func greet(name string) string {\n"
        'main.go:10:\treturn fmt.Sprintf("hello, %s (svc %s)", name, version.Version)\n'
        'main.go:14:\tfmt.Println(greet("world"))\n'
        'main_test.go:6:\tif got := greet("go"); got != "hello, go (svc 1.2.3)" {\n'
        'main_test.go:7:\t\tt.Fatalf("greet: %q", got)'
    )
    spread = await search_box.grep("greet", glob="*.js", workspace="extension")
    shown = [line for line in spread.text.splitlines() if not line.startswith("[")]  # notes
    assert "--" not in shown
    assert len(spread.lines) > 2 and len(shown) == len(spread.lines)


async def test_grep_options(search_box: Toolbox, extra: None) -> None:
    box = search_box
    ci = await box.grep("VERSION", ignore_case=True, glob="*.go", workspace="primary")
    assert ci.files == ["internal/version/version.go", "main.go"]
    digits = await box.grep(r"v\d = \d;", workspace="extension")
    assert [(ln.path, ln.line) for ln in digits.lines] == [
        (f"src/deep/m{i}.js", 1) for i in range(1, 8)]
    one_file = await box.grep("greet", path="index.js", workspace="extension")
    assert one_file.lines == [GrepLine(path="index.js", line=1,
                                       text="export function greet(name) {")]
    in_dir = await box.grep("Version", path="internal", workspace="primary")
    assert in_dir.files == ["internal/version/version.go"]
    assert (await box.grep("nothing-like-this", workspace="primary")).text == (
        "(no matches for 'nothing-like-this' in .)")


async def test_grep_skips_binaries_and_excluded_dirs(search_box: Toolbox, extra: None) -> None:
    found = await search_box.grep("greet", workspace="extension")
    assert found.files == ["index.js"] + [f"src/deep/m{i}.js" for i in range(1, 8)] + [
        "test/index.test.js"]
    assert found.binary_files == ["src/blob.bin"]
    assert found.text.splitlines()[-1] == "[binary files match, not shown: src/blob.bin]"


async def test_grep_output_is_bounded_with_a_note(sandbox: Sandbox, workspaces: WorkspaceSet,
                                                  extra: None, use_ripgrep: bool) -> None:
    box = Toolbox(sandbox, workspaces, use_ripgrep=use_ripgrep, max_results=4)
    cut = await box.grep("const v", workspace="extension")
    assert len(cut.lines) == 4 and cut.truncated
    assert cut.text.splitlines()[-1] == (
        "[3 more lines not shown; narrow the pattern, path or glob]")


async def test_grep_rejects_a_bad_pattern(search_box: Toolbox) -> None:
    with pytest.raises(ToolError) as info:
        await search_box.grep("func (", workspace="primary")
    assert str(info.value).startswith("grep: invalid regular expression 'func (': ")


async def test_both_engines_agree(sandbox: Sandbox, workspaces: WorkspaceSet,
                                  extra: None) -> None:
    rg = Toolbox(sandbox, workspaces, use_ripgrep=True)
    portable = Toolbox(sandbox, workspaces, use_ripgrep=False)
    for kwargs in [{"pattern": "greet"}, {"pattern": "const", "context": 2},
                   {"pattern": "GREET", "ignore_case": True, "glob": "src/**"}]:
        a = await rg.grep(workspace="extension", **kwargs)  # type: ignore[arg-type]
        b = await portable.grep(workspace="extension", **kwargs)  # type: ignore[arg-type]
        assert (a.lines, a.binary_files, a.text) == (b.lines, b.binary_files, b.text)
    for pattern in ["**", "*.go", "internal/**/*.go"]:
        assert (await rg.glob(pattern, workspace="primary")).paths == (
            await portable.glob(pattern, workspace="primary")).paths
