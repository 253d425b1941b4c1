#!/usr/bin/env bash
# Build the real `coder` program (server + CLI + agent in one binary) from the Go
# module proxy at a pinned release, and cache it per version:
#   ~/.cache/sandlot/coder/<version>/coder
# A cached binary is reused as is, so this is instant after the first run.
#
#   scripts/build-coder.sh            build (or reuse) and print the binary's path
#   SANDLOT_CODER_VERSION=v2.x.y ...  another release (its `go` line must suit our Go)
#
# Releases (adr/0045): scripts/coder-version pins v2.30.0, the newest the module proxy serves
# (its version list is refused; v2.30.1 and v2.31.0 are not served), built unpatched (its `go`
# line, 1.25.6, suits our Go). scripts/coder-version-oldest names v2.27.0, the oldest supported:
# the first with `coder whoami -o json` (sandlot's preflight; v2.26.0 has no --output on
# whoami). v2.27.0 needs one patch (below): a dependency of an experimental subcommand is
# refused by the proxy. Others tried: v2.26.0 builds unpatched; v2.27.1 and v2.28.0 are refused
# whole by the proxy; v2.27.3 is missing from the checksum database.
#
# Why not `go install ...@version`: coder's go.mod has `replace` directives, which
# `go install` refuses; so the module is downloaded, copied somewhere writable and
# built in place. The default build (no `slim` tag) keeps `coder server`; without
# the `embed` tag the web UI is a placeholder, which the tests do not need.
set -euo pipefail

# The pinned release lives in one file, read by this script and the test harness.
version=${SANDLOT_CODER_VERSION:-$(cat "$(dirname "$0")/coder-version")}
module=github.com/coder/coder/v2
cache_root=${SANDLOT_CODER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandlot/coder}
dest_dir=$cache_root/$version
dest=$dest_dir/coder

# Beside the binary: the provisioner protocol's .proto from the same release, which
# the test harness compiles to encode templates for the echo provisioner.
proto_rel=provisionersdk/proto/provisioner.proto
proto=$dest_dir/proto/$proto_rel

if [ -x "$dest" ] && [ -f "$proto" ]; then
  echo "$dest"
  exit 0
fi

command -v go >/dev/null || { echo "build-coder: go is not installed" >&2; exit 1; }
# Never let go fetch another toolchain: nothing but the module proxy is reachable.
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false

now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$2"; }
log() { echo "build-coder: $*" >&2; }

mkdir -p "$dest_dir"
work=$(mktemp -d "$dest_dir/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

t0=$(now)
log "downloading $module@$version"
json=$(go mod download -json "$module@$version")
src=$(printf '%s' "$json" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d.get("Dir", "")); sys.exit(1 if d.get("Error") else 0)') || {
  log "download failed: $json"
  exit 1
}
t1=$(now)
mkdir -p "$(dirname "$proto")"
cp "$src/$proto_rel" "$proto.tmp" && chmod u+w "$proto.tmp" && mv "$proto.tmp" "$proto"
if [ -x "$dest" ]; then
  echo "$dest"
  exit 0
fi

# The module cache is read-only; the build needs a writable tree of its own.
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
cd "$work/src"

# Per-release patches, each as small as possible and checked to have applied.
case "$version" in
  v2.27.0)
    # `coder exp boundary` (experimental, unused by sandlot) imports a pseudo-version
    # of github.com/coder/boundary that the module proxy here refuses (403). Drop
    # that one subcommand; every command sandlot uses is built as released.
    rm cli/exp_boundary.go cli/exp_boundary_test.go
    grep -q '^		r.boundary(),$' cli/root.go || { log "patch for $version no longer applies"; exit 1; }
    sed -i '/^		r.boundary(),$/d' cli/root.go
    ;;
esac

log "downloading the build's dependencies"
nice -n 15 go list -deps ./cmd/coder >/dev/null
t2=$(now)

log "building ./cmd/coder (nice 15; several minutes on 2 cores)"
# buildinfo.tag makes `coder version` and the agent report the release, as a
# released binary does (otherwise they say v0.0.0-devel).
nice -n 15 go build -trimpath \
  -ldflags "-s -w -X $module/buildinfo.tag=${version#v}" \
  -o "$work/coder" ./cmd/coder
t3=$(now)

mv "$work/coder" "$dest"
timings=$(printf 'version=%s module_download_s=%s deps_download_s=%s build_s=%s size_bytes=%s\n' \
  "$version" "$(elapsed "$t0" "$t1")" "$(elapsed "$t1" "$t2")" "$(elapsed "$t2" "$t3")" \
  "$(stat -c %s "$dest")")
echo "$timings" > "$dest_dir/build-timings.txt"
log "$timings"
echo "$dest"
