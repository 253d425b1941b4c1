"""One SDK tracer and meter provider for the telemetry tests, with in-memory exporters.

OpenTelemetry's global providers can be set once per process; every test clears what the
exporter holds. Other tests on the same worker then emit spans too, which costs them nothing
they check.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


class _WhileRecording(InMemorySpanExporter):
    """Keeps spans only while a telemetry test runs: the provider outlives the tests that set
    it, and the worker's other tests must not fill memory with their spans."""

    recording = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if not self.recording:
            return SpanExportResult.SUCCESS
        return super().export(spans)


@dataclass
class Recorded:
    spans: _WhileRecording
    metrics: InMemoryMetricReader


_RECORDED: Recorded | None = None


def _install() -> Recorded:
    global _RECORDED
    if _RECORDED is None:
        exporter = _WhileRecording()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _RECORDED = Recorded(exporter, reader)
    return _RECORDED


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    found = _install()
    found.spans.clear()
    found.metrics.get_metrics_data()  # drop what earlier tests measured (delta reset)
    found.spans.recording = True
    yield found
    found.spans.recording = False
    found.spans.clear()
