"""What a fan-out reports: one outcome per sandbox, events while it runs, and the whole report."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from ..secrets import GLOBAL


class Stage(enum.StrEnum):
    """Where one sandbox of a fan-out is. The last four are final."""

    QUEUED = "queued"
    CREATING = "creating"
    READY = "ready"
    RUNNING = "running"
    CLOSING = "closing"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        return self in (Stage.DONE, Stage.FAILED, Stage.CANCELLED)


@dataclass(frozen=True)
class Slot:
    """Which sandbox of the fan-out a job runs in: its position and its label."""

    index: int
    label: str


@dataclass
class Timings:
    """Seconds each phase took (None: the phase never ran) and when the sandbox was ready,
    counted from the start of the fan-out."""

    create: float | None = None
    ready_at: float | None = None
    job: float | None = None
    close: float | None = None


@dataclass
class SandboxOutcome:
    """One sandbox's part of a fan-out.

    `stage` is final: `done` (the job returned `value`), `failed` (`error` is what creating the
    sandbox, the job or closing it raised) or `cancelled` (the fan-out was cancelled first).
    """

    slot: Slot
    provider: str
    stage: Stage = Stage.QUEUED
    sandbox: str | None = None
    on_close: str | None = None
    closed: bool = False
    value: Any = None
    error: BaseException | None = None
    timings: Timings = field(default_factory=Timings)

    @property
    def index(self) -> int:
        return self.slot.index

    @property
    def label(self) -> str:
        return self.slot.label

    @property
    def ok(self) -> bool:
        return self.stage is Stage.DONE

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready mapping; the value is kept when JSON can hold it, else its repr.
        Every secret a sandbox of this process was given shows as `[secret:NAME]`."""
        return GLOBAL.scrubber.value({
            "index": self.index,
            "label": self.label,
            "provider": self.provider,
            "sandbox": self.sandbox,
            "stage": self.stage.value,
            "on_close": self.on_close,
            "closed": self.closed,
            "value": _jsonable(self.value),
            "error": None
            if self.error is None
            else {"type": type(self.error).__name__, "message": str(self.error)},
            "timings": {
                "create": self.timings.create,
                "ready_at": self.timings.ready_at,
                "job": self.timings.job,
                "close": self.timings.close,
            },
        })


@dataclass(frozen=True)
class FanoutEvent:
    """One sandbox moved to `stage`; `elapsed` counts from the start of the fan-out."""

    slot: Slot
    stage: Stage
    elapsed: float
    sandbox: str | None = None
    error: BaseException | None = None


@dataclass
class FanoutReport:
    """Every sandbox's outcome, in slot order, and how the fan-out as a whole ended."""

    outcomes: list[SandboxOutcome]
    duration: float
    cancelled: bool = False

    @property
    def ok(self) -> bool:
        return not self.cancelled and all(outcome.ok for outcome in self.outcomes)

    @property
    def failed(self) -> list[SandboxOutcome]:
        return [outcome for outcome in self.outcomes if outcome.stage is Stage.FAILED]

    @property
    def values(self) -> list[Any]:
        """The job values in slot order (None where a sandbox did not finish its job)."""
        return [outcome.value for outcome in self.outcomes]

    @property
    def not_closed(self) -> list[SandboxOutcome]:
        """Sandboxes that were created but whose close did not finish: they may be left."""
        return [o for o in self.outcomes if o.sandbox is not None and not o.closed]

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for outcome in self.outcomes:
            counts[outcome.stage.value] = counts.get(outcome.stage.value, 0) + 1
        return {
            "ok": self.ok,
            "cancelled": self.cancelled,
            "duration": self.duration,
            "counts": counts,
            "sandboxes": [outcome.to_json() for outcome in self.outcomes],
        }


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return _jsonable(to_json())
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    return repr(value)
