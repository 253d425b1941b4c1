#!/usr/bin/env bash
# The agent toolbox's search tools use ripgrep in the sandbox when present (tests cover both
# paths), and its portable fallback is tested against a busybox-only userland.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/lib/apt-ensure ripgrep busybox
