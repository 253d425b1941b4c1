"""Navigation through real language servers in the sandbox, the same test bodies for every
language (tests/lsp/cases.py) on every backend: definition across files and packages,
references where grep over-matches, hover types, symbols, diagnostics matching the type
checker, and a rename across files after which the project still builds and its tests pass.
"""

from __future__ import annotations

import re

import anyio
import pytest

from sandlot import verify
from sandlot.lsp.navigator import detector_for
from sandlot.tools import Toolbox

from .conftest import Project, project_params

pytestmark = pytest.mark.anyio

GO_PROJECTS = [p for p in project_params() if p[1] == "go"]


def _ids(param: tuple[str, str]) -> str:
    return f"{param[0]}-{param[1]}"


async def test_definition_across_files_and_packages(project: Project) -> None:
    case = project.case
    found = await project.lsp.find_definition(*case.definition_at)
    assert [(d.path, d.span.line) for d in found] == [case.definition], found
    assert found[0].in_workspace and found[0].text is not None
    if case.language == "go":
        # The first call on a cold workspace was visible: gopls said what it was loading.
        assert any("Loading packages" in p for p in project.progress), project.progress


async def test_definition_by_symbol_name(project: Project) -> None:
    case = project.case
    found = await project.lsp.find_definition(case.definition[0], symbol=case.symbol)
    assert [(d.path, d.span.line) for d in found] == [case.definition], found


async def test_references_are_exact_where_grep_over_matches(project: Project) -> None:
    case = project.case
    refs = await project.lsp.find_references(*case.references_at)
    exact = {(r.path, r.span.line) for r in refs}
    assert exact == case.references, refs
    grep = await Toolbox(project.sandbox, env=project.env).grep(case.grep)
    hits = {(line.path, line.line) for line in grep.lines if line.match}
    false_positives = hits - exact
    # The cache's get and the standard library's get are called in the same files: a grep
    # for the call names them all, the server names only the store's method.
    assert len(false_positives) >= 2, (hits, exact)
    print(f"{case.language}: server {len(exact)} references; grep {len(hits)} hits, "
          f"{len(false_positives)} false positives: {sorted(false_positives)}")


async def test_hover_shows_the_type(project: Project) -> None:
    hover = await project.lsp.hover(*project.case.hover_at)
    assert hover is not None and project.case.hover in hover.text, hover


async def test_document_and_workspace_symbols(project: Project) -> None:
    case = project.case
    path, line = case.definition
    symbols = await project.lsp.document_symbols(path)
    method = case.symbol.rsplit(".", 1)[-1]
    assert any(s.name.endswith(method) and s.location.span.line == line for s in symbols)
    found = await project.lsp.workspace_symbols("Store")
    assert any(s.name == "Store" and s.location.in_workspace for s in found), found
    assert all(s.location.in_workspace for s in found)


async def test_diagnostics_match_the_type_checker(project: Project) -> None:
    case = project.case
    path, content, line = case.planted
    box = Toolbox(project.sandbox, env=project.env)
    before = await project.sandbox.exec(["cat", "--", path])
    if before.exit_code == 0:
        await box.read(path)  # a module the crate declares (Rust): replaced, then restored
    await box.write(path, content)
    try:
        diagnostics = await project.lsp.diagnostics(path)
        errors = [d for d in diagnostics if d.severity == "error"]
        assert [d.span.line for d in errors] == [line], diagnostics
        report = await verify.run_typecheck(project.sandbox, language=case.language,
                                            env=project.env)
        checker = {(f.file, f.line) for f in report.findings if f.severity == "error"}
        assert (path, line) in checker, report.findings
    finally:
        if before.exit_code == 0:
            await project.sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", path],
                                       stdin=before.stdout, check=True)
        else:
            await project.sandbox.exec(["rm", "-f", "--", path])


async def test_rename_across_files_builds_and_passes_its_tests(project: Project) -> None:
    case = project.case
    sandbox, lsp = project.sandbox, project.lsp
    before = await _snapshot(project)
    done = await lsp.rename_symbol(*case.references_at, case.new_name)
    try:
        changed = {(f.path, c.span.line) for f in done.files for c in f.changes}
        assert {ref for ref in case.references} <= changed, done
        assert len(done.files) >= 2 and done.new_name == case.new_name
        checked = await sandbox.exec(["sh", "-c", case.check], env=project.env, timeout=600)
        assert checked.exit_code == 0, checked.stdout + checked.stderr
        after = await _snapshot(project)
        for path, _ in case.references:
            assert re.search(rf"\b{case.new_name}\b", after[path]), path
    finally:
        # Rename back at the same place, so the module's other tests see the fixture as it was.
        back = await lsp.rename_symbol(*case.references_at, done.old_name)
        assert back.count == done.count
    assert await _snapshot(project) == before


async def _snapshot(project: Project) -> dict[str, str]:
    paths = sorted({p for p, _ in project.case.references})
    out = {}
    for path in paths:
        result = await project.sandbox.exec(["cat", "--", path], check=True)
        out[path] = result.stdout
    return out


# The client's syncing and reads are the same for every language: Go shows them.
@pytest.mark.parametrize("project", GO_PROJECTS, indirect=True, ids=_ids)
async def test_a_file_the_server_has_open_is_synced_when_a_command_changed_it(
        project: Project) -> None:
    """The server answers from its own copy of a file it has open (an earlier call opened
    it), not from the disk: a command's change to that file must reach the server before the
    next call on another file, or the answer points at lines that moved."""
    case = project.case
    path, line, column = case.references_at
    lsp, sandbox = project.lsp, project.sandbox
    ws = lsp.workspaces.choose(None)
    other = min(p for p, _ in case.references if p != path)
    await lsp.document_symbols(other)  # now open in the server
    server, _ = await lsp.server(ws, detector_for(other))
    assert ws.contain(other) in lsp._opened(server, ws)
    before = (await sandbox.exec(["cat", "--", other], check=True)).stdout
    try:
        # Two lines more at its top, in place, by a command: every reference in it moves.
        await sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", other],
                           stdin=("// moved\n// down\n" + before).encode(), check=True)
        refs = await lsp.find_references(path, line, column)
        got = {(r.path, r.span.line) for r in refs}
        assert got == {(p, n + 2 if p == other else n) for p, n in case.references}, refs
    finally:
        await sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", other], stdin=before.encode(),
                           check=True)
    refs = await lsp.find_references(path, line, column)
    assert {(r.path, r.span.line) for r in refs} == case.references, refs


# The client's syncing and reads are the same for every language: Go shows them.
@pytest.mark.parametrize("project", GO_PROJECTS, indirect=True, ids=_ids)
async def test_a_file_a_command_changes_between_calls_is_seen_by_the_next(
        project: Project) -> None:
    """The client keeps the texts it read, and the helper sends a file again only when a stat
    or its digest says it changed (lsp/cache.py): a command's change, in place and of the same
    size, even in the same clock tick as the last read, shows in the very next call: in the
    file the call is on (synced to the server) and in a file the answer points into."""
    case = project.case
    path, line, column = case.references_at
    # A file the answer points into that no call opens in the server (one it has open is
    # shown as the server has it: its positions refer to that text).
    opened = {path, case.definition_at[0], case.hover_at[0]}
    other = min(ref for ref in case.references if ref[0] not in opened)
    marks = {path: line, other[0]: other[1]}
    sandbox, lsp = project.sandbox, project.lsp
    ws = lsp.workspaces.choose(None)
    before = {p: (await sandbox.exec(["cat", "--", p], check=True)).stdout for p in marks}

    async def shown() -> dict[tuple[str, int], str | None]:
        refs = await lsp.find_references(path, line, column)
        return {(r.path, r.span.line): r.text for r in refs}

    async def mark(word: str) -> None:
        for p, n in marks.items():  # in place (`cat >`: the same inode), then the next call
            lines = before[p].split("\n")
            lines[n - 1] += f" // {word}"
            await sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", p],
                               stdin="\n".join(lines).encode(), check=True)
        got = await shown()
        for p, n in marks.items():
            assert (got[(p, n)] or "").endswith(f"// {word}"), (p, n, got)

    def proven() -> bool:  # held, with a fingerprint: the next read only stats them
        return all((lsp._cache.get(ws.contain(p)) or (None,))[0] is not None for p in marks)

    try:
        await anyio.sleep(2.5)  # older than the cache's racy window
        await shown()
        assert proven()
        await mark("one")
        assert not proven()  # just written: read and hashed next time
        await mark("two")  # the same size, in the same tick as the last write
        await anyio.sleep(2.5)
        await shown()
        assert proven()
        await mark("six")  # the same size again, over texts a stat would have proven
    finally:
        for p, text in before.items():
            await sandbox.exec(["sh", "-c", 'cat > "$1"', "sh", p], stdin=text.encode(),
                               check=True)
    assert (await shown())[(path, line)] == before[path].split("\n")[line - 1]
