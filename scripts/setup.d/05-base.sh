#!/usr/bin/env bash
# Debian packages the core tests need: bubblewrap for the local backend's isolation mode.
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/lib/apt-ensure bubblewrap
