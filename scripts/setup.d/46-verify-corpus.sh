#!/usr/bin/env bash
# The verify corpus (bench/verify_corpus): 17 real projects at pinned versions from the Go
# module proxy, crates.io, PyPI and npm, with their overlays and npm dependencies, prepared
# once in ~/.cache/sandlot/verify-corpus (a later run finds them there and does nothing).
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHONPATH="$PWD/src:$PWD" .venv/bin/python -m bench.verify_corpus --prepare
