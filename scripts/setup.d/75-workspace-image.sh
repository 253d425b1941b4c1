#!/usr/bin/env bash
# The template tier's workspace image (tests/template): a root file system from Debian's
# packages (debootstrap + apt: Go, Node, Python, Rust, git), cached as a tar under
# ~/.cache/sandlot/workspace-image/<recipe>/ by scripts/build-workspace-image.sh; the tests
# `docker import` it into their private engine. Instant when cached; the first build downloads
# ~600 MB of packages from deb.debian.org (measured in adr/0045).
# SANDLOT_SKIP_WORKSPACE_IMAGE=1 skips it; the tier then skips (fails when CI=true).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${SANDLOT_SKIP_WORKSPACE_IMAGE:-}" ]; then
  echo "workspace-image: SANDLOT_SKIP_WORKSPACE_IMAGE set, not building"
  exit 0
fi
log=$(mktemp -t sandlot-workspace-image.XXXXXX.log)
start=$SECONDS
if ! scripts/build-workspace-image.sh >"$log" 2>&1; then
  echo "workspace-image: building the workspace image failed; log tail:" >&2
  tail -n 40 "$log" >&2
  rm -f "$log"
  exit 1
fi
echo "workspace-image: $(tail -n 1 "$log") ($((SECONDS - start))s)"
rm -f "$log"
