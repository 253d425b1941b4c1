"""Run the scenarios on one backend and record each result.

Order per backend: `create` (the main sandbox), the common scenarios, the close check
(`close`, or `on-close-delete` on coder), the backend's own scenarios, then `cleanup` for
backends that set something up. A failed `create` fails the scenarios that needed its sandbox
("no sandbox"); every later scenario still runs.

The failure-injection hook: `--inject-failure NAME[@BACKEND]` (or $SANDLOT_DOGFOOD_INJECT_FAILURE,
comma-separated) makes scenario NAME fail after its own checks passed: the hook runs a command
that exits 86 in that scenario's sandbox with `check=True`, so the failure travels through
sandlot's own error path (`CommandFailed`) into the report and the exit code. Scenarios
without a sandbox of their own raise `InjectedFailure` instead. It exists so the tests (and a
doubting operator) can see a failing run end to end without breaking anything real.
"""

from __future__ import annotations

import shutil
import tempfile
import time
import traceback
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from sandlot import Sandbox

from .context import CheckFailed, Context, InjectedFailure, ScenarioSkipped
from .progress import Progress
from .report import ScenarioResult, Status
from .scenarios import SCENARIOS
from .targets import Step, Target

INJECT_ENV = "SANDLOT_DOGFOOD_INJECT_FAILURE"
INJECTED_EXIT = 86
#: A scenario that takes longer than this is stopped and failed (a hang is a finding too).
SCENARIO_TIMEOUT = 1200.0


@dataclass(frozen=True)
class Injection:
    scenario: str
    backend: str | None = None

    def matches(self, backend: str, scenario: str) -> bool:
        return self.scenario == scenario and self.backend in (None, backend)

    @classmethod
    def parse(cls, text: str) -> Injection:
        scenario, _, backend = text.strip().partition("@")
        return cls(scenario, backend or None)


def parse_injections(values: Iterable[str]) -> list[Injection]:
    found = []
    for value in values:
        for part in value.split(","):
            if part.strip():
                found.append(Injection.parse(part))
    return found


class BackendRun:
    """Runs every selected scenario on one target."""

    def __init__(
        self,
        target: Target,
        *,
        progress: Progress,
        repo_root: Path,
        selected: set[str] | None,
        injections: list[Injection],
        strict: bool,
    ) -> None:
        self.target = target
        self.progress = progress
        self.repo_root = repo_root
        self.selected = selected
        self.injections = injections
        self.strict = strict
        self.results: list[ScenarioResult] = []

    def _wanted(self, name: str) -> bool:
        return self.selected is None or name in self.selected

    async def run(self) -> list[ScenarioResult]:
        name = self.target.name
        self.progress.backend_start(name, self.target.describe())
        with tempfile.TemporaryDirectory(prefix=f"dogfood-{name}-") as tmp:
            scratch = Path(tmp)
            try:
                await self._run_all(scratch)
            finally:
                if self.target.needs_cleanup:
                    await self._scenario("cleanup", self._cleanup, None, scratch)
        return self.results

    async def _cleanup(self, ctx: Context) -> None:
        await self.target.aclose()
        left = self.target.details.get("cleaned_up") or []
        ctx.details["deleted_leftovers"] = left
        ctx.summary(f"deleted leftovers: {', '.join(left)}" if left else "nothing left behind")

    async def _run_all(self, scratch: Path) -> None:
        sandbox: Sandbox | None = None

        async def create(ctx: Context) -> None:
            nonlocal sandbox
            sandbox = await self.target.provider().create()
            ctx.details.update(sandbox=sandbox.name, worktree=sandbox.worktree)
            ctx.summary(f"{sandbox.name} at {sandbox.worktree}")

        await self._scenario("create", create, None, scratch)
        try:
            for scenario, step in SCENARIOS.items():
                if not self._wanted(scenario):
                    continue
                if sandbox is None:
                    self._record(scenario, "skipped", 0.0, "no sandbox: `create` failed", {})
                    continue
                await self._scenario(scenario, step, sandbox, scratch)
        finally:
            if sandbox is not None:
                with anyio.CancelScope(shield=True):
                    closing = sandbox

                    async def close(ctx: Context) -> None:
                        await closing.close()
                        await self.target.check_closed(ctx, closing)

                    await self._scenario(self.target.close_scenario, close, None, scratch)
        for scenario, step in self.target.extra_scenarios().items():
            if self._wanted(scenario):
                await self._scenario(scenario, step, None, scratch)

    async def _scenario(
        self, scenario: str, step: Step, sandbox: Sandbox | None, scratch: Path
    ) -> None:
        backend = self.target.name
        self.progress.scenario_start(backend, scenario)
        own = scratch / scenario
        own.mkdir(parents=True, exist_ok=True)
        ctx = Context(backend, scenario, sandbox, self.progress, self.repo_root, own)
        started = time.monotonic()
        status: Status = "passed"
        error: str | None = None
        try:
            with anyio.move_on_after(SCENARIO_TIMEOUT) as scope:
                await step(ctx)
                if any(i.matches(backend, scenario) for i in self.injections):
                    await _inject(ctx)
            if scope.cancelled_caught:
                status, error = "failed", f"did not finish within {SCENARIO_TIMEOUT:.0f}s"
            elif self.strict and ctx.unavailable:
                status, error = "failed", "--strict: unavailable: " + "; ".join(ctx.unavailable)
        except ScenarioSkipped as exc:
            status, error = "skipped", str(exc)
        except Exception as exc:
            status, error = "failed", f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, CheckFailed):
                ctx.details["traceback"] = traceback.format_exc(limit=8)[-4000:]
        finally:
            shutil.rmtree(own, ignore_errors=True)
        if ctx.unavailable:
            ctx.details["unavailable"] = ctx.unavailable
        self._record(scenario, status, time.monotonic() - started, error, ctx.details)

    def _record(
        self, scenario: str, status: Status, duration: float, error: str | None,
        details: dict[str, Any],
    ) -> None:
        if status == "skipped" and self.strict:
            status, error = "failed", f"--strict: skipped: {error}"
        note = (error or "") if status != "passed" else str(details.get("summary", ""))
        self.progress.scenario_end(self.target.name, scenario, status, duration, note)
        self.results.append(
            ScenarioResult(self.target.name, scenario, status, duration, error, details)
        )


async def _inject(ctx: Context) -> None:
    ctx.step("injecting a failure (--inject-failure)")
    if ctx.sandbox is None or ctx.sandbox.closed:
        raise InjectedFailure(f"failure injected into {ctx.scenario!r} by --inject-failure")
    await ctx.sandbox.exec(
        f"echo 'dogfood: failure injected by --inject-failure' >&2; exit {INJECTED_EXIT}",
        check=True,
        timeout=60,
    )
