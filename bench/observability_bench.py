"""Scrubbing and telemetry on against both off, in one run (issue 32). Goal: <= 1.1x.

Subject: a local sandbox given 3 secrets, `exec(..., scrub=True)` and a toolbox `read` (which
scrubs its result), with OpenTelemetry's SDK configured (a batch span processor whose exporter
drops everything, and a meter provider). Baseline: the same calls on a sandbox given no secret,
`scrub=False`, and no provider configured -- what a program that uses neither pays.
The output holds no secret: what is measured is the cost of looking.
"""

from __future__ import annotations

import contextlib
import functools
import statistics
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import sandlot
from sandlot import Secret
from sandlot.tools import Toolbox

from .core import Measurement
from .measures import Scratch

COMMAND = "for i in $(seq 200); do echo line $i of some ordinary build output; done"


@contextlib.contextmanager
def telemetry_on(tracer_provider: Any, meter_provider: Any) -> Iterator[None]:
    """Configure the global providers for the block, then back to unconfigured (the API keeps
    them in module globals; a program would set them once, the bench flips them per call)."""
    trace, metrics_internal = _globals()
    trace._TRACER_PROVIDER = tracer_provider
    metrics_internal._METER_PROVIDER = meter_provider
    try:
        yield
    finally:
        trace._TRACER_PROVIDER = None
        metrics_internal._METER_PROVIDER = None


@functools.cache
def _globals() -> tuple[Any, Any]:
    """The API modules holding the global providers, imported once (not in every call's flip:
    the bench's own work is not what it measures)."""
    from opentelemetry import trace
    from opentelemetry.metrics import _internal as metrics_internal

    return trace, metrics_internal


def _providers() -> tuple[Any, Any]:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Drop(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer = TracerProvider()
    tracer.add_span_processor(BatchSpanProcessor(Drop()))
    return tracer, MeterProvider()


async def _measure(subject: Callable[[], Awaitable[None]], baseline: Callable[[], Awaitable[None]],
                   rounds: int, warmup: int = 5) -> tuple[float, float, float, float]:
    """Median wall and median CPU seconds (this process's, its threads' included: the SDK's
    batch processor) per call of subject and baseline, alternating call by call so drift and
    the other load of a shared machine hit both alike (core.interleaved, with CPU time)."""
    for _ in range(warmup):
        await subject()
        await baseline()
    wall: dict[bool, list[float]] = {True: [], False: []}
    cpu: dict[bool, list[float]] = {True: [], False: []}
    for i in range(rounds):
        for is_subject in ((True, False) if i % 2 == 0 else (False, True)):
            call = subject if is_subject else baseline
            started, used = time.perf_counter(), time.process_time()
            await call()
            cpu[is_subject].append(time.process_time() - used)
            wall[is_subject].append(time.perf_counter() - started)
    return (statistics.median(wall[True]), statistics.median(wall[False]),
            statistics.median(cpu[True]), statistics.median(cpu[False]))


async def run(quick: bool = False) -> list[Measurement]:
    rounds = 20 if quick else 300
    tracer, meter = _providers()
    rows: list[Measurement] = []
    secrets = {f"TOKEN_{i}": Secret(f"s3cr3t-{i}-" + "x" * 32) for i in range(3)}
    with Scratch() as scratch:
        (scratch / "f.txt").write_text("".join(f"line {i} of a source file\n" for i in range(400)))
        async with sandlot.local().session() as on, sandlot.local().session() as off:
            await on.copy_in(scratch / "f.txt", f"{on.worktree}/f.txt")
            await off.copy_in(scratch / "f.txt", f"{off.worktree}/f.txt")
            box_on = Toolbox(on, secrets={k: v.reveal() for k, v in secrets.items()})
            box_off = Toolbox(off)

            async def exec_on() -> None:
                with telemetry_on(tracer, meter):
                    result = await on.exec(COMMAND, env=secrets, scrub=True)
                assert result.ok

            async def exec_off() -> None:
                assert (await off.exec(COMMAND)).ok

            async def read_on() -> None:
                with telemetry_on(tracer, meter):
                    result = await box_on.call("read", {"path": "f.txt"})
                assert result.ok, result.text

            async def read_off() -> None:
                result = await box_off.call("read", {"path": "f.txt"})
                assert result.ok, result.text

            for what, subject, baseline in (("exec of 200 lines", exec_on, exec_off),
                                            ("toolbox read of 400 lines", read_on, read_off)):
                # This process's CPU time per call too: on a loaded machine the wall clock
                # magnifies any extra work by the run queue's length.
                s, b, cpu_s, cpu_b = await _measure(subject, baseline, rounds)
                rows.append(Measurement(
                    "observability", "local", f"{what}, 3 secrets scrubbed + OTel SDK",
                    f"{what}, neither", s, b, "s", target="<= 1.1x",
                    notes=f"{'meets' if s <= 1.1 * b else 'misses'} the goal; "
                          f"overhead {1e6 * (s - b):.0f} us; CPU time "
                          f"{1e6 * cpu_s:.0f} vs {1e6 * cpu_b:.0f} us ({cpu_s / cpu_b:.2f}x)",
                    extra={"overhead_us": round(1e6 * (s - b), 1),
                           "cpu_us": [round(1e6 * cpu_s, 1), round(1e6 * cpu_b, 1)]},
                ))
    tracer.shutdown()
    return rows
