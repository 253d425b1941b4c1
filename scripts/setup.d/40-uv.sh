#!/usr/bin/env bash
# uv (from PyPI) in a directory of its own, .tools/uv/bin: the python mode installs requirements
# with `uv pip install --target`, and the tests put exactly this directory on a sandbox's PATH
# (not the whole venv, whose python3 would shadow the runtime under test).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x .tools/uv/bin/uv ] || .venv/bin/python -m pip install -q --disable-pip-version-check \
  --target .tools/uv "uv>=0.5"
