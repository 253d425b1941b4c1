#!/usr/bin/env bash
# The project's virtualenv with the package (editable) and its dev (which holds deepagents and
# langchain-tests), server, bench and mcp extras.
# Says each step it takes (nothing when .venv is already up to date).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${SANDLOT_PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "python: creating .venv with $("$py" --version 2>&1)" >&2
  "$py" -m venv .venv
fi
stamp=.venv/.sandlot-installed
want=$(sha256sum pyproject.toml | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "python: upgrading pip in .venv" >&2
  .venv/bin/python -m pip install -q --upgrade pip
  echo "python: installing sandlot (editable) with its dev, server, bench and mcp extras" >&2
  .venv/bin/python -m pip install -q -e ".[dev,server,bench,mcp]"
  echo "$want" > "$stamp"
fi
