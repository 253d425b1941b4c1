#!/usr/bin/env bash
# A minimal OpenTelemetry Collector (OTLP receiver + file exporter) built from the Go module
# proxy, for the telemetry test that exports over OTLP to a real collector (adr/0048). Cached
# under ~/.cache/sandlot/otelcol/<version>; the source is providers/otelcol/main.go.
set -euo pipefail
cd "$(dirname "$0")/../.."
version=v0.165.0
contrib=v0.165.1
out="$HOME/.cache/sandlot/otelcol/$version"
if [ -x "$out/sandlot-otelcol" ] && cmp -s providers/otelcol/main.go "$out/main.go"; then
  exit 0
fi
command -v go >/dev/null || { echo "otelcol: go is not installed" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp providers/otelcol/main.go providers/otelcol/go.mod "$work/"
(
  cd "$work"
  go get "go.opentelemetry.io/collector/otelcol@$version" \
    "go.opentelemetry.io/collector/receiver/otlpreceiver@$version" \
    "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@$contrib"
  # -e: tidy also resolves the test dependencies of every package, and the proxy refuses one
  # of them (otlpencodingextension v0.165.1: 403), which the build never needs.
  go mod tidy -e
  go build -trimpath -ldflags "-s -w" -o sandlot-otelcol .
)
mkdir -p "$out"
cp "$work/sandlot-otelcol" "$out/sandlot-otelcol.tmp"
cp providers/otelcol/main.go "$out/main.go"
mv "$out/sandlot-otelcol.tmp" "$out/sandlot-otelcol"
echo "otelcol: built $out/sandlot-otelcol"
