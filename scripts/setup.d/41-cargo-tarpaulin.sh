#!/usr/bin/env bash
# cargo tarpaulin, which run_tests(coverage=True) uses for Rust: built from crates.io (rustup
# cannot download the llvm-tools component cargo llvm-cov needs here; tarpaulin's ptrace engine
# needs none). Installed in $SANDLOT_VERIFY_TOOLS/tarpaulin and linked into its bin/, which the
# verify tests put first on the sandboxes' PATH (docker mounts it read-only at the same path).
# The first build took 5 min on two busy cores; a resumed one reuses its target directory.
# Idempotent: a stamp file makes a second run take well under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=${SANDLOT_VERIFY_TOOLS:-/opt/sandlot/verify-tools}
version=0.37.5
mkdir -p "$tools/bin"

if [ ! -x "$tools/tarpaulin/bin/cargo-tarpaulin" ] || [ ! -f "$tools/.tarpaulin-$version" ]; then
  echo "cargo-tarpaulin: building $version from crates.io (minutes, the first time)"
  start=$SECONDS
  CARGO_TARGET_DIR="${SANDLOT_CACHE:-$HOME/.cache/sandlot}/tarpaulin-target" \
    nice cargo install --locked --root "$tools/tarpaulin" "cargo-tarpaulin@$version"
  rm -f "$tools"/.tarpaulin-* && touch "$tools/.tarpaulin-$version"
  echo "cargo-tarpaulin: built in $((SECONDS - start))s"
fi
ln -sfn "$tools/tarpaulin/bin/cargo-tarpaulin" "$tools/bin/cargo-tarpaulin"
"$tools/bin/cargo-tarpaulin" tarpaulin --version >/dev/null  # it runs
