"""read / write / edit: paging, binary refusal, the read-tracker, atomic writes, read-only."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from sandlot import Sandbox
from sandlot.errors import EditMatchError, NotReadError, ReadOnlyError, ToolError
from sandlot.tools import ErrorResult, Toolbox, scripts
from sandlot.tools.runner import run_script
from sandlot.workspaces import WorkspaceSet

pytestmark = pytest.mark.anyio


async def sh(sandbox: Sandbox, workspaces: WorkspaceSet, name: str, command: str) -> str:
    done = await sandbox.exec(command, cwd=workspaces.resolve(name), check=True)
    return done.stdout


# ---- read -----------------------------------------------------------------------------------


async def test_read_numbers_lines(box: Toolbox) -> None:
    page = await box.read("internal/version/version.go", workspace="primary")
    assert page.text == (
        "     1\tpackage version\n"
        "     2\t\n"
        "     3\t// Version of the service.\n"
        '     4\tconst Version = "1.2.3"'
    )
    assert (page.total_lines, page.start_line, page.end_line, page.more) == (4, 1, 4, False)
    assert page.path == "internal/version/version.go"


async def test_large_files_are_paged(sandbox: Sandbox, workspaces: WorkspaceSet) -> None:
    await sh(sandbox, workspaces, "primary", "seq 1 5000 > big.txt")
    box = Toolbox(sandbox, workspaces)
    first = await box.read("big.txt", workspace="primary")
    assert (first.start_line, first.end_line, first.total_lines, first.more) == (1, 2000, 5000,
                                                                                True)
    assert first.text.splitlines()[-1] == "[lines 1-2000 of 5000; read on with offset=2001]"
    last = await box.read("big.txt", offset=4001, limit=2000, workspace="primary")
    assert (last.start_line, last.end_line, last.more) == (4001, 5000, False)
    assert last.text.splitlines()[0] == "  4001\t4001"
    assert last.text.splitlines()[-1] == "  5000\t5000"
    past = await box.read("big.txt", offset=6000, workspace="primary")
    assert past.text == "(big.txt has 5000 lines; offset 6000 is past its end)"


async def test_a_page_is_bounded_in_bytes_and_long_lines_are_cut(
    sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    await sh(sandbox, workspaces, "primary",
             "awk 'BEGIN { for (i = 0; i < 100; i++) { s = s \"x\" }; "
             "for (i = 1; i <= 50; i++) print i s s s s s s s s s s s s s s s s s s s s }' "
             "> wide.txt")  # 50 lines of ~2000 chars
    box = Toolbox(sandbox, workspaces, read_bytes=20_000, max_line_chars=100)
    page = await box.read("wide.txt", workspace="primary")
    assert page.end_line == 9  # ten lines fit in 20 000 bytes; the cut tenth is not shown
    assert page.more and page.cut_lines == 9
    assert page.text.splitlines()[0].endswith(" …[line cut at 100 chars]")
    nxt = await box.read("wide.txt", offset=page.end_line + 1, workspace="primary")
    assert nxt.start_line == 10


async def test_empty_and_unterminated_files(sandbox: Sandbox, workspaces: WorkspaceSet) -> None:
    await sh(sandbox, workspaces, "primary", ": > empty.txt; printf 'a\\nb' > noeol.txt")
    box = Toolbox(sandbox, workspaces)
    empty = await box.read("empty.txt", workspace="primary")
    assert (empty.text, empty.total_lines) == ("(empty.txt is empty)", 0)
    noeol = await box.read("noeol.txt", workspace="primary")
    assert (noeol.text, noeol.total_lines) == ("     1\ta\n     2\tb", 2)


async def test_binary_files_are_refused(sandbox: Sandbox, workspaces: WorkspaceSet) -> None:
    await sh(sandbox, workspaces, "primary", "printf 'MZ\\000\\001\\002' > tool.exe")
    box = Toolbox(sandbox, workspaces)
    with pytest.raises(ToolError) as info:
        await box.read("tool.exe", workspace="primary")
    assert str(info.value) == (
        "read: tool.exe is a binary file (5 bytes) and cannot be shown as text; inspect it "
        "with bash (e.g. `file` or `od -c | head`)"
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("nope.go", 'read: nope.go does not exist in workspace "primary"; check the path (glob '
                    "lists files)"),
        ("internal", 'read: internal is a directory in workspace "primary"; name a file (glob '
                     "lists a directory's files)"),
        ("go.mod/x", 'read: go.mod/x is not a directory in workspace "primary" (a component of '
                     "the path is a file)"),
    ],
)
async def test_read_errors(box: Toolbox, path: str, message: str) -> None:
    with pytest.raises(ToolError) as info:
        await box.read(path, workspace="primary")
    assert str(info.value) == message


# ---- write and the read-tracker ---------------------------------------------------------


async def test_write_creates_parents(box: Toolbox, sandbox: Sandbox,
                                     workspaces: WorkspaceSet) -> None:
    made = await box.write("pkg/new/file.go", "package new\n", workspace="primary")
    assert (made.created, made.bytes_written, made.path) == (True, 12, "pkg/new/file.go")
    assert made.text == "Created pkg/new/file.go in workspace primary (12 bytes)"
    assert await sh(sandbox, workspaces, "primary", "cat pkg/new/file.go") == "package new\n"


async def test_overwrite_needs_a_read_in_the_same_workspace(
    box: Toolbox, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    with pytest.raises(NotReadError) as info:
        await box.write("README.md", "# replaced\n", workspace="extension")
    assert str(info.value) == (
        'write: README.md already exists in workspace "extension" and has not been read; read '
        "it first, then write it (this keeps changes you have not seen from being overwritten)"
    )
    # Reading primary/README.md does not unlock extension/README.md.
    await box.read("README.md", workspace="primary")
    with pytest.raises(NotReadError):
        await box.write("README.md", "# replaced\n", workspace="extension")
    with pytest.raises(NotReadError):
        await box.edit("README.md", "Node", "JS", workspace="extension")
    assert "A Node package." in await sh(sandbox, workspaces, "extension", "cat README.md")

    await box.read("README.md", workspace="extension")
    done = await box.write("README.md", "# replaced\n", workspace="extension")
    assert not done.created
    assert await sh(sandbox, workspaces, "extension", "cat README.md") == "# replaced\n"
    assert "A Go service." in await sh(sandbox, workspaces, "primary", "cat README.md")


async def test_a_file_written_is_known_and_can_be_edited(box: Toolbox) -> None:
    await box.write("notes.txt", "one\ntwo\n", workspace="primary")
    await box.write("notes.txt", "one\ntwo\nthree\n", workspace="primary")
    edited = await box.edit("notes.txt", "two", "2", workspace="primary")
    assert edited.replacements == 1
    assert (await box.read("notes.txt", workspace="primary")).text.splitlines()[1] == "     2\t2"


async def test_write_keeps_the_mode_of_the_file_it_replaces(
    box: Toolbox, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    await sh(sandbox, workspaces, "primary", "printf '#!/bin/sh\\n' > run.sh; chmod 751 run.sh")
    await box.read("run.sh", workspace="primary")
    await box.write("run.sh", "#!/bin/sh\necho hi\n", workspace="primary")
    mode = await sh(sandbox, workspaces, "primary", "ls -l run.sh | cut -c1-10")
    assert mode.strip() == "-rwxr-x--x"


async def test_an_interrupted_write_leaves_no_half_file_and_no_litter(
    box: Toolbox, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    ws = workspaces["primary"]
    target = ws.contain("main.go")
    before = await sh(sandbox, workspaces, "primary", "cat main.go")
    started = anyio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield b"package main\n// half of the new content"
        started.set()
        await anyio.sleep(2)  # past the timeout (not forever: the backend drains stdin)
        yield b"too late"

    box.timeout = 0.5
    with pytest.raises(ToolError) as info:
        await box._write_bytes("write", ws, target, "any", "", stalled())
    assert started.is_set()
    assert "write timed out after 0.5s" in str(info.value)
    assert await sh(sandbox, workspaces, "primary", "cat main.go") == before
    litter = await sh(sandbox, workspaces, "primary", "ls -A | grep -c sandlot-write || true")
    assert litter.strip() == "0"


async def test_a_cancelled_write_leaves_no_litter(
    box: Toolbox, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    ws = workspaces["primary"]

    async def stalled() -> AsyncIterator[bytes]:
        yield b"partial"
        await anyio.sleep(2)
        yield b"too late"

    with anyio.move_on_after(0.5):
        await box._write_bytes("write", ws, ws.contain("fresh.txt"), "new", "", stalled())
    left = await sh(sandbox, workspaces, "primary", "ls -A")
    assert "fresh.txt" not in left.split() and "sandlot-write" not in left


# ---- edit -----------------------------------------------------------------------------------


async def test_edit_replaces_exactly_once(box: Toolbox, sandbox: Sandbox,
                                          workspaces: WorkspaceSet) -> None:
    await box.read("main.go", workspace="primary")
    done = await box.edit("main.go", 'greet("world")', 'greet("sandlot")', workspace="primary")
    assert done.text == "Edited main.go in workspace primary: 1 replacement"
    assert 'greet("sandlot")' in await sh(sandbox, workspaces, "primary", "cat main.go")


async def test_edit_counts_matches(box: Toolbox, sandbox: Sandbox,
                                   workspaces: WorkspaceSet) -> None:
    await box.read("main.go", workspace="primary")
    with pytest.raises(EditMatchError) as none:
        await box.edit("main.go", "func missing()", "x", workspace="primary")
    assert none.value.count == 0
    assert str(none.value) == (
        "edit: old text not found in main.go (0 matches); read the file again and copy the "
        "text exactly, including whitespace and indentation, without the line-number prefix"
    )
    with pytest.raises(EditMatchError) as many:
        await box.edit("main.go", "fmt.", "log.", workspace="primary")
    assert many.value.count == 2
    assert str(many.value) == (
        "edit: old text matches 2 times in main.go; include more surrounding lines to make it "
        "unique, or pass replace_all=true to change every one"
    )
    done = await box.edit("main.go", "fmt.", "log.", replace_all=True, workspace="primary")
    assert done.replacements == 2
    text = await sh(sandbox, workspaces, "primary", "cat main.go")
    assert text.count("log.") == 2 and "fmt." not in text


async def test_edit_keeps_bytes_it_does_not_touch(
    box: Toolbox, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    await sh(sandbox, workspaces, "primary",
             "printf 'caf\\351 latin1\\r\\nsecond line\\r\\n' > legacy.txt")
    await box.read("legacy.txt", workspace="primary")
    await box.edit("legacy.txt", "latin1\nsecond", "latin-1\nsecond", workspace="primary")
    raw = await sh(sandbox, workspaces, "primary", "od -An -c legacy.txt | tr -s ' '")
    assert raw.split() == ["c", "a", "f", "351", "l", "a", "t", "i", "n", "-", "1", "\\r",
                           "\\n", "s", "e", "c", "o", "n", "d", "l", "i", "n", "e", "\\r", "\\n"]


async def test_edit_argument_errors(box: Toolbox) -> None:
    await box.read("main.go", workspace="primary")
    with pytest.raises(ToolError, match="old is empty"):
        await box.edit("main.go", "", "x", workspace="primary")
    with pytest.raises(ToolError, match="identical"):
        await box.edit("main.go", "main", "main", workspace="primary")


async def test_a_write_refuses_a_file_changed_since_it_was_read(
    box: Toolbox, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    """edit's second round trip re-checks the digest from its first (concurrent change)."""
    ws = workspaces["primary"]
    target = ws.contain("go.mod")
    stale = await run_script(sandbox, scripts.WRITE, [ws.root, target, "any",
                                                      "0 0 -", "tok"], name="t", stdin=b"x")
    assert stale.exit_code == scripts.Exit.CHANGED
    assert "module example.com/svc" in await sh(sandbox, workspaces, "primary", "cat go.mod")


# ---- read-only ------------------------------------------------------------------------------


async def test_readonly_exposes_only_reading_tools(sandbox: Sandbox,
                                                   workspaces: WorkspaceSet) -> None:
    box = Toolbox(sandbox, workspaces, readonly=True)
    # The tools that change nothing: reading, searching, code navigation (not rename) and
    # the snapshot tools that only look.
    reading = ["read", "glob", "grep", "find_definition", "find_references", "hover",
               "document_symbols", "workspace_symbols", "diagnostics", "snapshot_list",
               "snapshot_diff"]
    assert box.tool_names == reading
    assert [t["function"]["name"] for t in box.tool_schemas()] == reading
    assert (await box.read("go.mod", workspace="primary")).total_lines == 3
    with pytest.raises(ReadOnlyError) as info:
        await box.write("go.mod", "x", workspace="primary")
    assert str(info.value) == (
        "write is not available: this toolbox is read-only (readonly=True); available tools: "
        "read, glob, grep, find_definition, find_references, hover, document_symbols, "
        "workspace_symbols, diagnostics, snapshot_list, snapshot_diff"
    )
    for tool, args in [("edit", {"path": "go.mod", "old": "a", "new": "b"}),
                       ("bash", {"command": "touch pwned"}), ("kill_shell", {"shell_id": "x"})]:
        result = await box.call(tool, {**args, "workspace": "primary"}
                                if tool != "kill_shell" else args)
        assert isinstance(result, ErrorResult)
        assert result.error == "ReadOnlyError"
        assert result.text.startswith(f"{tool} is not available: this toolbox is read-only")
    assert "pwned" not in await sh(sandbox, workspaces, "primary", "ls")
