#!/usr/bin/env bash
# uv (from PyPI) into the project's virtualenv: the python mode installs requirements with
# `uv pip install --target`, and the tests exercise that path (and the pip fallback without it).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .venv/bin/uv ] || .venv/bin/python -m pip install -q --disable-pip-version-check "uv>=0.5"
