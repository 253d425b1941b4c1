#!/usr/bin/env bash
# The project's virtualenv with the package (editable) and its dev, server, bench and mcp extras.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${SANDLOT_PYTHON:-python3}
[ -x .venv/bin/python ] || "$py" -m venv .venv
stamp=.venv/.sandlot-installed
want=$(sha256sum pyproject.toml | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e ".[dev,server,bench,mcp]"
  echo "$want" > "$stamp"
fi
