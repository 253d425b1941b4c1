"""What a scenario gets (`Context`) and how it says "skipped" or "wrong" (the exceptions)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sandlot import Sandbox

from .progress import Progress


class ScenarioSkipped(Exception):
    """The scenario could not run here (a tool or runtime is missing); the message says which."""


class CheckFailed(AssertionError):
    """What a scenario saw differs from what sandlot promises; the message says both."""


class InjectedFailure(Exception):
    """Raised by the failure-injection hook (`--inject-failure`), never by a real check."""


def expect(condition: bool, message: str) -> None:
    """Fail the scenario with `message` unless `condition` holds (works under `python -O`)."""
    if not condition:
        raise CheckFailed(message)


@dataclass
class Context:
    """One scenario's view of its backend."""

    backend: str
    scenario: str
    sandbox: Sandbox | None
    progress: Progress
    repo_root: Path
    scratch: Path
    """A host directory of this scenario's own (removed after the run)."""
    details: dict[str, Any] = field(default_factory=dict)
    """Filled by the scenario; lands in the report. `summary` is shown in the table."""
    unavailable: list[str] = field(default_factory=list)
    """Parts that could not run here (missing tool/runtime), each with the reason."""

    @property
    def box(self) -> Sandbox:
        """The backend's main sandbox (scenarios that make their own do not use this)."""
        if self.sandbox is None:
            raise CheckFailed("no sandbox: creating it failed (see the `create` scenario)")
        return self.sandbox

    def step(self, text: str) -> None:
        self.progress.step(self.backend, self.scenario, text)

    def summary(self, text: str) -> None:
        self.details["summary"] = text

    def missing(self, what: str) -> None:
        self.unavailable.append(what)
        self.step(f"unavailable: {what}")
