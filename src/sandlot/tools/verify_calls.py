"""The verify tools (run_tests, run_lint, run_typecheck, run_failing_tests, run_script) as
toolbox methods: one table of which `sandlot.verify` call each is and how its report is
rendered, one runner for them all."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import ToolboxBase
from .verify_tools import VerifyResult, render_findings, render_script, render_tests

#: Tool name -> how its report reads as text (the `sandlot.verify` function has the tool's name).
RENDERERS: dict[str, Callable[[Any], str]] = {
    "run_tests": render_tests,
    "run_lint": render_findings,
    "run_typecheck": render_findings,
    "run_failing_tests": render_tests,
    "run_script": render_script,
}


class VerifyTools(ToolboxBase):
    """sandlot.verify in the chosen workspace (the language detected in its root)."""

    async def _verify(self, tool: str, *args: str, workspace: str | None,
                      secrets: list[str] | None = None, **options: Any) -> VerifyResult:
        self._mutating(tool)
        from .. import verify

        ws = self.workspaces.choose(workspace)
        env = self._command_env(tool, secrets)
        run = getattr(verify, tool)
        report = await run(self.sandbox, *args, **options, workspace=ws.name,
                           workspaces=self.workspaces, env=env or None)
        return VerifyResult(tool=tool, text=RENDERERS[tool](report), workspace=ws.name,
                            passed=report.ok, report=report)

    async def run_tests(self, language: str | None = None, *,
                        workspace: str | None = None,
                        secrets: list[str] | None = None,
                        coverage: bool = False) -> VerifyResult:
        """sandlot.verify.run_tests in the chosen workspace (`coverage`: line coverage too)."""
        return await self._verify("run_tests", language=language, workspace=workspace,
                                  secrets=secrets, coverage=coverage)

    async def run_lint(self, language: str | None = None, *,
                       workspace: str | None = None,
                       secrets: list[str] | None = None) -> VerifyResult:
        """sandlot.verify.run_lint in the chosen workspace."""
        return await self._verify("run_lint", language=language, workspace=workspace,
                                  secrets=secrets)

    async def run_typecheck(self, language: str | None = None, *,
                            workspace: str | None = None,
                            secrets: list[str] | None = None) -> VerifyResult:
        """sandlot.verify.run_typecheck in the chosen workspace."""
        return await self._verify("run_typecheck", language=language, workspace=workspace,
                                  secrets=secrets)

    async def run_failing_tests(self, language: str | None = None, *,
                                workspace: str | None = None,
                                secrets: list[str] | None = None) -> VerifyResult:
        """sandlot.verify.run_failing_tests: the last report's failures, in the chosen
        workspace."""
        return await self._verify("run_failing_tests", language=language, workspace=workspace,
                                  secrets=secrets)

    async def run_script(self, name: str, *, workspace: str | None = None,
                         secrets: list[str] | None = None) -> VerifyResult:
        """sandlot.verify.run_script (a package.json script) in the chosen workspace."""
        return await self._verify("run_script", name, workspace=workspace, secrets=secrets)
