"""`run()`: one job on N sandboxes at once, each created, used and closed in its own task.

Two bounds: `max_parallel` sandboxes exist at a time (creating, working or closing), and at most
`max_creating` of them are being created at once (creating a Coder workspace is the slow,
rate-limited part; a job is usually not). Every sandbox that was created is closed, with its
`on_close`, whatever happens: a failed job, `fail_fast`, `stop`, or a cancel scope around the
call. A create that is cancelled releases what it made itself (the provider contract).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

import anyio

from .. import telemetry
from ..errors import ConfigurationError
from ..provider import IsolatedSandboxProvider
from ..sandbox import Sandbox
from .models import FanoutEvent, FanoutReport, SandboxOutcome, Slot, Stage

log = logging.getLogger("sandlot.fanout")

T = TypeVar("T")
Job = Callable[[Sandbox, Slot], Awaitable[Any]]
EventCallback = Callable[[FanoutEvent], None]
ProviderFactory = Callable[[Slot], IsolatedSandboxProvider]
Providers = IsolatedSandboxProvider | Sequence[IsolatedSandboxProvider] | ProviderFactory

DEFAULT_MAX_PARALLEL = 4


async def run(
    job: Job,
    providers: Providers,
    *,
    n: int | None = None,
    labels: Sequence[str] | None = None,
    max_parallel: int = DEFAULT_MAX_PARALLEL,
    max_creating: int | None = None,
    fail_fast: bool = False,
    on_event: EventCallback | None = None,
    stop: anyio.Event | None = None,
) -> FanoutReport:
    """Run `job(sandbox, slot)` in N sandboxes; return every sandbox's outcome.

    `providers` is a list (one sandbox per entry), or one provider or a factory
    `(slot) -> provider` together with `n`. A job's exception fails its sandbox only, unless
    `fail_fast`, which then cancels every other job. Setting `stop` cancels every job too; the
    report then says `cancelled`. Either way each created sandbox is closed before this
    returns. A cancel scope around the call also closes them all, then cancels as usual.
    """
    slots, chosen = _plan(providers, n, labels)
    if max_parallel < 1:
        raise ConfigurationError(f"max_parallel must be at least 1, got {max_parallel}")
    creating = max_parallel if max_creating is None else max_creating
    if creating < 1:
        raise ConfigurationError(f"max_creating must be at least 1, got {creating}")
    fanout = _Fanout(job, on_event, fail_fast)
    outcomes = [
        SandboxOutcome(slot=slot, provider=provider.name, on_close=_policy(provider, None))
        for slot, provider in zip(slots, chosen, strict=True)
    ]
    live = anyio.CapacityLimiter(max_parallel)
    create = anyio.CapacityLimiter(min(creating, max_parallel))
    # One trace for the whole fan-out: each sandbox's span (and its create, commands and
    # close under it) is a child of this one.
    attributes = {"sandlot.fanout.sandboxes": len(slots),
                  "sandlot.fanout.max_parallel": max_parallel}
    with telemetry.span("sandlot.fanout", attributes) as current:
        try:
            await _run_all(fanout, outcomes, chosen, live, create, stop)
        finally:
            for outcome in outcomes:
                if not outcome.stage.final:
                    outcome.stage = Stage.CANCELLED
            telemetry.set_attributes(current, {
                "sandlot.fanout.failed": sum(o.stage is Stage.FAILED for o in outcomes),
                "sandlot.fanout.cancelled": fanout.cancelled})
    return FanoutReport(
        outcomes=outcomes,
        duration=time.monotonic() - fanout.started,
        cancelled=fanout.cancelled,
    )


async def _run_all(
    fanout: _Fanout,
    outcomes: list[SandboxOutcome],
    chosen: list[IsolatedSandboxProvider],
    live: anyio.CapacityLimiter,
    create: anyio.CapacityLimiter,
    stop: anyio.Event | None,
) -> None:
    async with anyio.create_task_group() as group:
        fanout.group = group
        if stop is not None:
            group.start_soon(fanout.watch, stop)
        async with anyio.create_task_group() as workers:
            for outcome, provider in zip(outcomes, chosen, strict=True):
                workers.start_soon(fanout.one, outcome, provider, live, create)
        group.cancel_scope.cancel()  # every worker ended: stop the watcher


def _plan(
    providers: Providers, n: int | None, labels: Sequence[str] | None
) -> tuple[list[Slot], list[IsolatedSandboxProvider]]:
    if isinstance(providers, IsolatedSandboxProvider):
        if n is None:
            raise ConfigurationError("a single provider needs n= (how many sandboxes to make)")
        count = n
    elif isinstance(providers, Sequence):
        if n is not None and n != len(providers):
            raise ConfigurationError(
                f"n={n} but {len(providers)} providers were given; pass one or the other"
            )
        count = len(providers)
    elif callable(providers):
        if n is None:
            raise ConfigurationError("a provider factory needs n= (how many sandboxes to make)")
        count = n
    else:
        raise ConfigurationError(
            "providers must be a provider, a list of providers, or a factory (slot) -> provider"
        )
    if count < 1:
        raise ConfigurationError(f"a fan-out needs at least one sandbox, got {count}")
    if labels is not None and len(labels) != count:
        raise ConfigurationError(f"{len(labels)} labels for {count} sandboxes")
    if labels is not None and len(set(labels)) != len(labels):
        raise ConfigurationError("labels must be unique")
    slots: list[Slot] = []
    chosen: list[IsolatedSandboxProvider] = []
    for index in range(count):
        label = labels[index] if labels is not None else None
        if isinstance(providers, IsolatedSandboxProvider):
            provider = providers
        elif isinstance(providers, Sequence):
            provider = providers[index]
        else:
            slot = Slot(index, label or f"sandbox-{index}")
            provider = providers(slot)
            if not isinstance(provider, IsolatedSandboxProvider):
                raise ConfigurationError(
                    f"the provider factory returned {type(provider).__name__} for slot "
                    f"{index}; it must return a provider"
                )
        if label is None and not callable(providers):
            label = f"{provider.name}-{index}"
        slot = Slot(index, label or f"sandbox-{index}")
        slots.append(slot)
        chosen.append(provider)
    return slots, chosen


def _policy(provider: IsolatedSandboxProvider, sandbox: Sandbox | None) -> str | None:
    """The on_close a sandbox gets: its own if it says, else its provider's options'."""
    for holder in (sandbox, getattr(provider, "options", None)):
        value = getattr(holder, "on_close", None)
        if isinstance(value, str):
            return value
    return None


class _Fanout:
    """The shared state of one `run()` call: clock, callback, and the group to cancel."""

    def __init__(self, job: Job, on_event: EventCallback | None, fail_fast: bool) -> None:
        self.job = job
        self.on_event = on_event
        self.fail_fast = fail_fast
        self.started = time.monotonic()
        self.cancelled = False
        self.group: anyio.abc.TaskGroup | None = None

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def emit(self, outcome: SandboxOutcome, stage: Stage) -> None:
        outcome.stage = stage
        if self.on_event is None:
            return
        event = FanoutEvent(
            slot=outcome.slot,
            stage=stage,
            elapsed=self.elapsed(),
            sandbox=outcome.sandbox,
            error=outcome.error,
        )
        try:
            self.on_event(event)
        except Exception:  # a broken progress display must not break the fan-out
            log.exception("fan-out on_event callback failed; continuing")

    def cancel_all(self, reason: str) -> None:
        if not self.cancelled:
            log.info("fan-out: cancelling every job (%s)", reason)
        self.cancelled = True
        if self.group is not None:
            self.group.cancel_scope.cancel()

    async def watch(self, stop: anyio.Event) -> None:
        await stop.wait()
        self.cancel_all("stop was set")

    async def one(
        self,
        outcome: SandboxOutcome,
        provider: IsolatedSandboxProvider,
        live: anyio.CapacityLimiter,
        create: anyio.CapacityLimiter,
    ) -> None:
        attributes: dict[str, str | int] = {"sandlot.fanout.index": outcome.index,
                                            "sandlot.fanout.label": outcome.label,
                                            "sandlot.sandbox.provider": outcome.provider}
        try:
            with telemetry.span("sandlot.fanout.sandbox", attributes) as current:
                async with live:
                    await self._lifecycle(outcome, provider, create)
                telemetry.set_attributes(current, {"sandlot.fanout.stage": outcome.stage.value})
                if outcome.error is not None:
                    telemetry.set_attributes(current, {
                        "error.type": telemetry.error_type(outcome.error)})
        except anyio.get_cancelled_exc_class():
            if not outcome.stage.final:
                self.emit(outcome, Stage.CANCELLED)
            raise
        if outcome.stage is Stage.FAILED and self.fail_fast:
            self.cancel_all(f"{outcome.label} failed and fail_fast is set")

    async def _lifecycle(
        self,
        outcome: SandboxOutcome,
        provider: IsolatedSandboxProvider,
        create: anyio.CapacityLimiter,
    ) -> None:
        self.emit(outcome, Stage.CREATING)
        began = time.monotonic()
        try:
            async with create:
                began = time.monotonic()
                sandbox = await provider.create()
        except Exception as exc:
            outcome.timings.create = time.monotonic() - began
            outcome.error = exc
            log.info("fan-out %s: creating the sandbox failed: %s", outcome.label, exc)
            self.emit(outcome, Stage.FAILED)
            return
        outcome.timings.create = time.monotonic() - began
        outcome.timings.ready_at = self.elapsed()
        outcome.sandbox = sandbox.name
        outcome.on_close = _policy(provider, sandbox)
        self.emit(outcome, Stage.READY)
        cancelled = True  # until the job returns or raises an ordinary exception
        try:
            self.emit(outcome, Stage.RUNNING)
            began = time.monotonic()
            try:
                outcome.value = await self.job(sandbox, outcome.slot)
                cancelled = False
            except Exception as exc:
                cancelled = False
                outcome.error = exc
                log.info("fan-out %s: the job failed: %s", outcome.label, exc)
            finally:
                outcome.timings.job = time.monotonic() - began
        finally:
            await self._close(outcome, sandbox, cancelled=cancelled)

    async def _close(self, outcome: SandboxOutcome, sandbox: Sandbox, *, cancelled: bool) -> None:
        self.emit(outcome, Stage.CLOSING)
        began = time.monotonic()
        with anyio.CancelScope(shield=True):
            try:
                await sandbox.close()
                outcome.closed = True
            except Exception as exc:
                log.warning("fan-out %s: closing the sandbox failed: %s", outcome.label, exc)
                if outcome.error is None:
                    outcome.error = exc
            finally:
                outcome.timings.close = time.monotonic() - began
            if outcome.error is not None:
                self.emit(outcome, Stage.FAILED)
            elif cancelled:
                self.emit(outcome, Stage.CANCELLED)
            else:
                self.emit(outcome, Stage.DONE)
