"""A Node project with neither a typecheck script nor a tsconfig.json has no type checker: a
clear result that says so, not tsc's help text reported as a tool failure."""

from __future__ import annotations

import json

import pytest

import sandlot
from sandlot.tools import Toolbox
from sandlot.verify import run_typecheck
from sandlot.workspaces import WorkspaceSet

pytestmark = pytest.mark.anyio


async def test_node_without_a_type_checker_says_so() -> None:
    async with sandlot.local().session() as sandbox:
        package = json.dumps({"name": "plain", "version": "1.0.0", "scripts": {"test": "true"}})
        await sandbox.exec(["sh", "-c", 'printf %s "$1" > package.json', "sh", package],
                           check=True)
        report = await run_typecheck(sandbox)
        assert report.configured is False and report.findings == []
        assert "no type checker configured" in report.note and "tsconfig.json" in report.note
        assert report.command == ""  # nothing ran
        box = Toolbox(sandbox, WorkspaceSet.parse(f"w={sandbox.worktree}"))
        shown = await box.call("run_typecheck", {})
        assert "no type checker configured" in shown.text
        # With a tsconfig.json the checker is configured again (and tsc is what would run).
        await sandbox.exec("echo '{}' > tsconfig.json", check=True)
        from sandlot.verify.detector import choose, detectors_for, probe

        ws = await probe(sandbox, sandbox.worktree)
        detector = choose("t", ws, None, detectors_for(ws.files))
        assert await detector.no_typechecker(ws) is None
