#!/usr/bin/env bash
# The MCP Inspector (npm), a third-party MCP client the tests drive `sandlot mcp` with (its CLI
# mode). 0.15.0: a release that runs on this machine's Node 20 (the 0.21+ and 2.x lines need
# Node >= 22).
set -euo pipefail
cd "$(dirname "$0")/../.."
want=0.15.0
dir=.tools/mcp-inspector
if [ "$(cat "$dir/.version" 2>/dev/null)" != "$want" ] || [ ! -x "$dir/node_modules/.bin/mcp-inspector" ]; then
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/inspector@$want")
  echo "$want" > "$dir/.version"
fi
