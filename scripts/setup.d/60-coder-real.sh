#!/usr/bin/env bash
# The real-Coder test tier (tests/realcoder): PostgreSQL from Debian, and the real
# `coder` binary built from the Go module proxy at the pinned release.
#
# The build is slow when nothing is cached (measured on this 2-core machine: ~1.5 min
# of downloads, then the compile; see tests/realcoder/README.md), so:
#   - a cached binary (~/.cache/sandlot/coder/<version>/coder) makes this instant;
#   - SANDLOT_SKIP_CODER_BUILD=1 skips the build; the tier then skips locally and
#     fails under CI=true (tests/realcoder/shared.py::require_real_coder).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/lib/apt-ensure postgresql openssh-client
if [ -n "${SANDLOT_SKIP_CODER_BUILD:-}" ]; then
  echo "coder-real: SANDLOT_SKIP_CODER_BUILD set, not building the coder binary"
  exit 0
fi
# Two releases: the pin (scripts/coder-version, the newest the module proxy serves; the whole
# real tier runs on it) and the oldest supported (scripts/coder-version-oldest; a named subset
# runs on it, see tests/realcoder/README.md). Each is cached on its own.
for version in "$(cat scripts/coder-version)" "$(cat scripts/coder-version-oldest)"; do
  log=$(mktemp -t sandlot-build-coder.XXXXXX.log)
  start=$SECONDS
  if ! SANDLOT_CODER_VERSION=$version scripts/build-coder.sh >"$log" 2>&1; then
    echo "coder-real: building coder $version failed; log tail:" >&2
    tail -n 40 "$log" >&2
    rm -f "$log"
    exit 1
  fi
  echo "coder-real: coder $version ready ($((SECONDS - start))s)"
  rm -f "$log"
done
