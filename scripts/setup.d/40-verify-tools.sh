#!/usr/bin/env bash
# What the verify tests need beyond the machine's go, cargo, node/npm and python3.11:
#   - golangci-lint (built from the Go module proxy), ruff, mypy, pytest and coverage.py (a
#     dedicated venv), all reachable from ONE directory, $SANDLOT_VERIFY_TOOLS/bin, which the
#     tests put first on the sandboxes' PATH (the project's own .venv stays separate: its versions float);
#   - clippy and rustfmt (rustup components);
#   - node_modules of the node fixtures (npm ci from their committed package-lock.json).
# Idempotent: stamp files make a second run take well under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=${SANDLOT_VERIFY_TOOLS:-/opt/sandlot/verify-tools}
golangci_version=v2.15.0
py_tools="ruff==0.17.6 mypy==2.4.1 pytest==9.2.0 coverage==7.17.4"
mkdir -p "$tools/bin"

if [ ! -x "$tools/bin/golangci-lint" ] || [ ! -f "$tools/.golangci-lint-$golangci_version" ]; then
  echo "verify-tools: building golangci-lint $golangci_version (takes minutes the first time)"
  start=$SECONDS
  GOBIN="$tools/bin" GOFLAGS=-buildvcs=false \
    go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_version"
  rm -f "$tools"/.golangci-lint-* && touch "$tools/.golangci-lint-$golangci_version"
  echo "verify-tools: golangci-lint built in $((SECONDS - start))s"
fi

want=$(printf '%s' "$py_tools" | sha256sum | cut -c1-16)
if [ "$(cat "$tools/.python-tools" 2>/dev/null)" != "$want" ] || [ ! -x "$tools/venv/bin/pytest" ]; then
  echo "verify-tools: installing $py_tools"
  py=${SANDLOT_PYTHON:-python3.11}
  command -v "$py" >/dev/null || py=python3
  [ -x "$tools/venv/bin/python" ] || "$py" -m venv "$tools/venv"
  # shellcheck disable=SC2086
  "$tools/venv/bin/python" -m pip install -q --disable-pip-version-check $py_tools
  echo "$want" > "$tools/.python-tools"
fi
# (Linked every run: cheap, and idempotent.)
for bin in ruff mypy pytest; do ln -sfn "$tools/venv/bin/$bin" "$tools/bin/$bin"; done
# python3 too: run_tests runs `python3 -m pytest` (and `-m coverage`), so a project without its
# own .venv is tested with the venv's interpreter. A script, not a link: a link to the venv's
# python3 link ends at the base interpreter, which finds no pyvenv.cfg beside it (so no
# coverage.py, and pytest only if the base happens to have it).
printf '#!/bin/sh\nexec %s "$@"\n' "$tools/venv/bin/python3" > "$tools/bin/.python3.new"
chmod 755 "$tools/bin/.python3.new" && mv -f "$tools/bin/.python3.new" "$tools/bin/python3"

if ! cargo clippy --version >/dev/null 2>&1 || ! cargo fmt --version >/dev/null 2>&1; then
  echo "verify-tools: adding rustup components clippy, rustfmt"
  rustup component add clippy rustfmt
fi

for lock in tests/fixtures/verify/*/package-lock.json; do
  dir=$(dirname "$lock")
  want=$(sha256sum "$lock" | cut -c1-16)
  if [ "$(cat "$dir/node_modules/.sandlot-lock" 2>/dev/null)" != "$want" ]; then
    echo "verify-tools: npm ci in $dir"
    # npm ci, except where npm's own lock file omits other platforms' optional packages (rollup's
    # native builds under vitest) and ci then refuses it: install from the same lock, unsaved.
    (cd "$dir" && { npm ci --no-audit --no-fund --loglevel=silent ||
      npm install --no-save --no-audit --no-fund --loglevel=error; })
    echo "$want" > "$dir/node_modules/.sandlot-lock"
  fi
done
