"""sandlot's spans exported over OTLP/HTTP to a real OpenTelemetry Collector (the minimal build
of scripts/setup.d/47-otelcol.sh: OTLP receiver, file exporter), started on loopback by the
test; what the collector wrote to its file is what the test reads."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandlot.testing.ports import listen_port
from tests.helpers import require

REPO = Path(__file__).resolve().parents[2]
COLLECTOR = Path.home() / ".cache" / "sandlot" / "otelcol" / "v0.165.0" / "sandlot-otelcol"
SECRET = "otlp-secret-4c2d8e"

CONFIG = """
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{port}
exporters:
  file:
    path: {out}
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file]
"""

PROGRAM = """
import anyio, sandlot
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider(resource=Resource.create({{"service.name": "sandlot-test"}}))
provider.add_span_processor(BatchSpanProcessor(
    OTLPSpanExporter(endpoint="http://127.0.0.1:{port}/v1/traces")))
trace.set_tracer_provider(provider)

async def job(sandbox, slot):
    result = await sandbox.exec('printf %s "$TRACEPARENT"',
                                env={{"TOK": sandlot.Secret("{secret}")}})
    return result.stdout

async def main():
    report = await sandlot.fanout.run(job, sandlot.local(), n=2)
    print("\\n".join(report.values))

anyio.run(main)
provider.shutdown()
"""


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    require(COLLECTOR.is_file(), f"{COLLECTOR} missing; run scripts/setup.d/47-otelcol.sh")
    port, out = listen_port(), tmp_path / "spans.jsonl"
    config = tmp_path / "collector.yaml"
    config.write_text(CONFIG.format(port=port, out=out))
    log = (tmp_path / "collector.log").open("w")
    proc = subprocess.Popen([str(COLLECTOR), "--config", str(config)], stdout=log,
                            stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:  # ready when the receiver accepts connections
            assert proc.poll() is None, (tmp_path / "collector.log").read_text()
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert time.monotonic() < deadline, "the collector never listened"
            time.sleep(0.1)
        yield port, out
    finally:
        proc.terminate()
        proc.wait(30)
        log.close()


def spans_in(path: Path) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = []
    for line in path.read_text().splitlines() if path.exists() else []:
        for resource in json.loads(line).get("resourceSpans", []):
            for scope in resource.get("scopeSpans", []):
                spans.extend(scope.get("spans", []))
    return spans


def test_a_fanout_reaches_a_real_collector(collector: tuple[int, Path]) -> None:
    port, out = collector
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(port=port, secret=SECRET)],
        capture_output=True, text=True, timeout=180,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 30
    while len(spans_in(out)) < 9 and time.monotonic() < deadline:  # the file exporter flushes
        time.sleep(0.2)
    spans = spans_in(out)
    names = sorted(span["name"] for span in spans)
    assert names.count("sandlot.fanout") == 1 and names.count("sandlot.fanout.sandbox") == 2
    assert names.count("sandlot.exec") == 2 and names.count("sandlot.create") == 2
    by_id = {span["spanId"]: span for span in spans}
    fanout = next(span for span in spans if span["name"] == "sandlot.fanout")
    assert {span["traceId"] for span in spans} == {fanout["traceId"]}
    execs = [span for span in spans if span["name"] == "sandlot.exec"]
    for span in execs:
        assert by_id[span["parentSpanId"]]["name"] == "sandlot.fanout.sandbox"
        assert by_id[by_id[span["parentSpanId"]]["parentSpanId"]] is fanout
    # Each command saw its own exec span's context (OTLP JSON ids are hex, as in traceparent).
    seen = {line.rsplit("-", 1)[0] for line in done.stdout.split()}
    assert seen == {f"00-{span['traceId']}-{span['spanId']}" for span in execs}
    assert SECRET not in out.read_text()
