"""OpenTelemetry spans and metrics for what a sandbox does (adr/0048).

Optional: `pip install 'sandlot[otel]'` brings `opentelemetry-api`; a program that configures a
tracer (or meter) provider gets sandlot's spans (or metrics). sandlot never imports the API
itself: until the program has (which configuring a provider takes), each instrumented call
costs one `sys.modules` lookup; with it loaded and nothing configured, one `isinstance`.

What is recorded, never more: names of things (provider, sandbox, tool, language), sizes,
counts, exit codes and error types. Never a command's arguments, an environment value, a
path's contents, an exception's message (which may quote output): a trace goes to other
people's systems.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter, Histogram, UpDownCounter
    from opentelemetry.trace import Span as Span

#: The instrumentation scope of every span and instrument.
SCOPE = "sandlot"

Attributes = Mapping[str, str | bool | int | float]


class _Api:
    """The OpenTelemetry API, imported once a program has imported it itself."""

    def __init__(self) -> None:
        from opentelemetry import context, metrics, propagate, trace
        from opentelemetry.metrics import NoOpMeterProvider
        from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, StatusCode

        self.context = context
        self.trace = trace
        self.metrics = metrics
        self.propagate = propagate
        self.off_tracers = (ProxyTracerProvider, NoOpTracerProvider)
        self.off_meters = NoOpMeterProvider
        self.error = StatusCode.ERROR


_api: _Api | None = None


def _loaded() -> _Api | None:
    """The API, or None while no provider can have been configured. A program configures one
    by importing `opentelemetry.trace` (or `.metrics`) itself, so until then sandlot imports
    nothing: the check is one lookup in `sys.modules` (adr/0048)."""
    global _api
    if _api is None:
        if "opentelemetry.trace" not in sys.modules and \
                "opentelemetry.metrics" not in sys.modules:
            return None
        try:
            _api = _Api()
        except ImportError:
            return None
    return _api


def tracing() -> bool:
    """Whether spans go anywhere: the API is loaded and a tracer provider configured."""
    return _tracer() is not None


#: The last provider's tracer: an SDK's get_tracer builds a new one per call (costly).
_cached: tuple[object, Any] | None = None


def _tracer() -> Any:
    global _cached
    api = _loaded()
    if api is None:
        return None
    provider = api.trace.get_tracer_provider()
    if isinstance(provider, api.off_tracers):
        return None
    if _cached is None or _cached[0] is not provider:
        _cached = (provider, provider.get_tracer(SCOPE, __version__))
    return _cached[1]


def measuring() -> bool:
    """Whether metrics go anywhere (a meter provider is configured)."""
    api = _loaded()
    if api is None:
        return False
    provider = api.metrics.get_meter_provider()
    # The global default is a proxy (a private class) until a real provider is set.
    return not (isinstance(provider, api.off_meters)
                or type(provider).__name__ == "_ProxyMeterProvider")


def error_type(exc: BaseException) -> str:
    """OpenTelemetry's `error.type`: the exception's class, never its message."""
    return type(exc).__qualname__


def span(name: str, attributes: Attributes | None = None
         ) -> contextlib.AbstractContextManager[Span | None]:
    """A span around the block (None when tracing is off). An exception sets `error.type` and
    the error status, and is not recorded (its message may quote a command's output)."""
    tracer = _tracer()
    if tracer is None:
        return _OFF
    return _Current(tracer, name, attributes)


#: What `span` gives while tracing is off (reusable: it holds nothing).
_OFF: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


class _Current:
    """A started span, current in the block. A class rather than the SDK's
    `start_as_current_span`, which is two generator context managers deep: every tool call and
    exec has one, and the layers were a fifth of its cost (bench/observability_bench.py)."""

    __slots__ = ("_attributes", "_name", "_span", "_token", "_tracer")

    def __init__(self, tracer: Any, name: str, attributes: Attributes | None) -> None:
        self._tracer, self._name, self._attributes = tracer, name, attributes

    def __enter__(self) -> Span:
        assert _api is not None
        started: Span = self._tracer.start_span(self._name, attributes=self._attributes)
        self._span = started
        self._token = _api.context.attach(_api.trace.set_span_in_context(started))
        return started

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: object) -> None:
        assert _api is not None
        try:
            if exc is not None:
                self._span.set_attribute("error.type", error_type(exc))
                self._span.set_status(_api.error)
        finally:
            _api.context.detach(self._token)
            self._span.end()


def set_attributes(current: Span | None, attributes: Attributes) -> None:
    if current is not None:
        current.set_attributes(attributes)


def command_attributes(argv: Sequence[str], display: str) -> dict[str, str | int]:
    """What a span says about a command: its program's name and its length, nothing else
    (a string command's program is `sh`: its first word may be `TOKEN=... cmd`)."""
    return {"process.executable.name": os.path.basename(argv[0]) if argv else "",
            "sandlot.command.length": len(display)}


def inject_traceparent(env: MutableMapping[str, str]) -> None:
    """Put the current span's context in a command's environment (`TRACEPARENT`,
    `TRACESTATE`), so a traced program inside joins the trace. The caller's own win."""
    if not tracing():
        return
    assert _api is not None
    carrier: dict[str, str] = {}
    _api.propagate.inject(carrier)
    for key, value in carrier.items():
        env.setdefault(key.upper(), value)


class _Instruments:
    def __init__(self) -> None:
        assert _api is not None
        meter = _api.metrics.get_meter(SCOPE, __version__)
        self.exec_duration: Histogram = meter.create_histogram(
            "sandlot.exec.duration", unit="s",
            description="How long a command run to completion took")
        self.active: UpDownCounter = meter.create_up_down_counter(
            "sandlot.sandboxes.active", unit="{sandbox}",
            description="Sandboxes created and not yet closed")
        self.copied: Counter = meter.create_counter(
            "sandlot.copy.bytes", unit="By", description="Bytes copied into or out of sandboxes")


_instruments: dict[int, _Instruments] = {}


def _meters() -> _Instruments | None:
    if not measuring():
        return None
    assert _api is not None
    key = id(_api.metrics.get_meter_provider())
    if key not in _instruments:
        _instruments[key] = _Instruments()
    return _instruments[key]


def record_exec(seconds: float, attributes: Attributes) -> None:
    meters = _meters()
    if meters is not None:
        meters.exec_duration.record(seconds, attributes)


def sandbox_opened(provider: str) -> None:
    meters = _meters()
    if meters is not None:
        meters.active.add(1, {"sandlot.sandbox.provider": provider})


def sandbox_closed(provider: str) -> None:
    meters = _meters()
    if meters is not None:
        meters.active.add(-1, {"sandlot.sandbox.provider": provider})


def bytes_copied(count: int, direction: str, provider: str) -> None:
    meters = _meters()
    if meters is not None:
        meters.copied.add(count, {"sandlot.copy.direction": direction,
                                  "sandlot.sandbox.provider": provider})


def tree_stats(path: str | os.PathLike[str]) -> tuple[int, int]:
    """(files, bytes) of a host file or directory tree (symlinks not followed)."""
    if not os.path.isdir(path):
        try:
            return 1, os.lstat(path).st_size
        except OSError:
            return 0, 0
    files = size = 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            with contextlib.suppress(OSError):
                size += os.lstat(os.path.join(root, name)).st_size
                files += 1
    return files, size
