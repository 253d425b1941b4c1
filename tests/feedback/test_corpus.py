"""Post-edit feedback on real projects of the verify corpus (bench/verify_corpus): a finding
planted by an edit through the toolbox is found by the per-file checks, in each language."""

from __future__ import annotations

import pytest

import sandlot
from bench.verify_corpus.fetch import prepared
from bench.verify_corpus.projects import by_name
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet
from tests.feedback.cases import Place
from tests.helpers import require
from tests.verify.support import missing_tools, tool_env

pytestmark = pytest.mark.anyio

#: project, file, old, new, the planted findings (file, line, rule) that must be found.
PLANTED: list[tuple[str, str, str, str, set[Place]]] = [
    ("go-uuid", "uuid.go", "type UUID [16]byte\n",
     'type UUID [16]byte\n\nfunc plantedFeedback(n int) string { return fmt.Sprintf("%s", n) }\n',
     {("uuid.go", 22, "printf")}),
    ("py-six", "six.py", "import functools\n", "import functools\nimport json\n",
     {("six.py", 26, "F401")}),
    ("node-dequal", "test/helpers.js", "  let result = a == b;\n",
     "  let result = a == b;\n  const plantedFeedback = 1;\n",
     {("test/helpers.js", 5, "no-unused-vars")}),
]


@pytest.mark.parametrize("project", [p[0] for p in PLANTED])
async def test_a_planted_finding_is_found(project: str) -> None:
    require(not missing_tools(), f"verify tools missing: {missing_tools()}")
    _, file, old, new, planted = next(p for p in PLANTED if p[0] == project)
    source = prepared(by_name([project])[0])
    async with sandlot.local(env=tool_env()).session() as sandbox:
        await sandbox.copy_in(str(source), sandbox.worktree)
        box = Toolbox(sandbox, WorkspaceSet({"w": sandbox.worktree}), feedback_budget=120)
        before = await box.read(file)
        assert before.ok
        edited = await box.edit(file, old, new)
    assert edited.feedback is not None, edited.text
    found = {(f.file, f.line, f.rule) for f in edited.feedback.findings}
    assert planted <= found, (planted, edited.feedback.findings)
    assert not [c for c in edited.feedback.checks if c.status in ("failed", "over_budget")]


async def test_rustfmt_finds_a_line_left_unformatted_in_rust_fnv() -> None:
    require(not missing_tools(), f"verify tools missing: {missing_tools()}")
    source = prepared(by_name(["rust-fnv"])[0])
    async with sandlot.local(env=tool_env()).session() as sandbox:
        await sandbox.copy_in(str(source), sandbox.worktree)
        box = Toolbox(sandbox, WorkspaceSet({"w": sandbox.worktree}), feedback_budget=120)
        await box.read("lib.rs")
        edited = await box.edit("lib.rs", "pub struct FnvHasher(u64);",
                                "pub struct FnvHasher( u64 );")
    assert edited.feedback is not None, edited.text
    assert edited.feedback.formatted is False, edited.text
    # rustfmt names the hunk's first line: the planted line (89) or a context line above it.
    assert [n for n in edited.feedback.format_lines if 80 <= n <= 89], edited.feedback
