#!/usr/bin/env bash
# The language servers sandlot.lsp's tests start in the sandboxes, all reachable from ONE
# directory, $SANDLOT_LANGUAGE_SERVERS/bin, which the tests put on the sandboxes' PATH (and the
# docker tier mounts read-only at the same path, as it does the verify tools):
#   - gopls, built from the Go module proxy (v0.24 needs go 1.27; this machine has 1.26);
#   - pyright and typescript-language-server + typescript, from npm (node is on every sandbox's
#     PATH already: the docker and Coder toolchain images lend the host's /usr);
#   - rust-analyzer, built from crates.io (ra_ap_rust-analyzer: rustup cannot download the
#     component here) at opt-level 1: the release profile's full optimisation takes well over an
#     hour on two cores; opt-level 1 about half an hour (once: cached), and indexes the tests'
#     crates in 6 s where opt-level 0 (8 minutes to build) took 49 s (adr/0053).
# Idempotent: stamp files make a second run take well under a second.
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${SANDLOT_LANGUAGE_SERVERS:-/opt/sandlot/language-servers}
gopls_version=v0.23.0
node_servers='"pyright": "1.1.414", "typescript-language-server": "5.1.3", "typescript": "5.9.3"'
ra_version=0.0.340  # 0.0.349 and newer use std::assert_matches, unstable on Rust 1.95
ra_profile=o1
mkdir -p "$dir/bin" "$dir/node"

if [ ! -x "$dir/bin/gopls" ] || [ ! -f "$dir/.gopls-$gopls_version" ]; then
  echo "language-servers: building gopls $gopls_version"
  start=$SECONDS
  GOBIN="$dir/bin" GOFLAGS=-buildvcs=false go install "golang.org/x/tools/gopls@$gopls_version"
  rm -f "$dir"/.gopls-* && touch "$dir/.gopls-$gopls_version"
  echo "language-servers: gopls built in $((SECONDS - start))s"
fi

want=$(printf '%s' "$node_servers" | sha256sum | cut -c1-16)
if [ "$(cat "$dir/.node-servers" 2>/dev/null)" != "$want" ] ||
   [ ! -x "$dir/node/node_modules/.bin/typescript-language-server" ]; then
  echo "language-servers: npm install $node_servers"
  printf '{"private": true, "dependencies": {%s}}\n' "$node_servers" > "$dir/node/package.json"
  (cd "$dir/node" && npm install --no-audit --no-fund --loglevel=error)
  echo "$want" > "$dir/.node-servers"
fi
# Linked every run: cheap, and idempotent. The .bin entries are relative symlinks themselves.
for bin in pyright-langserver typescript-language-server tsserver tsc; do
  ln -sfn "$dir/node/node_modules/.bin/$bin" "$dir/bin/$bin"
done

if [ ! -x "$dir/bin/rust-analyzer" ] || [ ! -f "$dir/.rust-analyzer-$ra_version-$ra_profile" ]; then
  echo "language-servers: building rust-analyzer $ra_version from crates.io (~30 min the first time)"
  start=$SECONDS
  # Its own target directory under the cache: a rebuild after a failure resumes there. The
  # release profile is turned down (opt-level 1, no LTO, many codegen units): the build is what
  # a fresh machine pays, and opt-level 1 keeps indexing quick (opt-level 0 is 8x slower).
  CARGO_TARGET_DIR="${SANDLOT_CACHE:-$HOME/.cache/sandlot}/rust-analyzer-target-$ra_profile" \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_DEBUG=0 CARGO_PROFILE_RELEASE_LTO=false \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=256 CARGO_PROFILE_RELEASE_INCREMENTAL=false \
    cargo install --locked --force --root "$dir/rust-analyzer" "ra_ap_rust-analyzer@$ra_version"
  ln -sfn "$dir/rust-analyzer/bin/rust-analyzer" "$dir/bin/rust-analyzer"
  rm -f "$dir"/.rust-analyzer-* && touch "$dir/.rust-analyzer-$ra_version-$ra_profile"
  echo "language-servers: rust-analyzer built in $((SECONDS - start))s"
fi
