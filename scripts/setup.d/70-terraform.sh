#!/usr/bin/env bash
# Terraform and the two providers of the Coder template (providers/coder/: coder/coder and
# kreuzwerker/docker), so tests/providers can `terraform validate` it offline.
#
# The Terraform registry is not reachable here, so `terraform init` cannot fetch providers:
# both are built from the Go module proxy and the test points terraform at them with
# `dev_overrides` in a CLI config of its own. terraform itself: the one on PATH when there is
# one (this machine image ships v1.11.x), else built from its Go module (it has `replace`
# directives, so `go install` refuses it: downloaded, copied, built in place).
#
# Cached per version under $SANDLOT_TF_CACHE (default ~/.cache/sandlot/terraform): instant
# once built; the first build takes minutes on 2 cores (measured: coder provider ~4.5 min,
# docker provider ~15 min with downloads, while other builds ran).
# SANDLOT_SKIP_TERRAFORM=1 skips it all; the validation test then skips (fails when CI=true).
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -n "${SANDLOT_SKIP_TERRAFORM:-}" ]; then
  echo "terraform: SANDLOT_SKIP_TERRAFORM set, not building"
  exit 0
fi

cache=${SANDLOT_TF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandlot/terraform}
terraform_version=v1.11.4
coder_provider=github.com/coder/terraform-provider-coder/v2@v2.19.0
# kreuzwerker tags (v3.x) are not Go-module versions (go.mod says terraform-providers/...),
# so the proxy serves commits only: this one is master of 2026-09-16.
docker_provider=github.com/kreuzwerker/terraform-provider-docker@v0.0.0-20260916201441-96d331c98ff4
export GOTOOLCHAIN=local GOFLAGS=-buildvcs=false
mkdir -p "$cache/providers"

# Build a module's main package in a writable copy of the module (works with `replace`
# directives and with a go.mod whose path differs from the one it is fetched by).
build_in_place() {  # module@version package output
  local json dir work
  json=$(go mod download -json "$1")
  dir=$(printf '%s' "$json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir","")); sys.exit(1 if d.get("Error") else 0)') || {
    echo "terraform: download of $1 failed: $json" >&2; return 1; }
  work=$(mktemp -d "$cache/build.XXXXXX")
  cp -r "$dir" "$work/src" && chmod -R u+w "$work/src"
  (cd "$work/src" && nice -n 15 go build -trimpath -ldflags "-s -w" -o "$3.tmp" "$2")
  mv "$3.tmp" "$3"
  chmod -R u+w "$work" && rm -rf "$work"
}

versioned() { printf '%s' "$1" | tr '/@' '__'; }

if ! command -v terraform >/dev/null 2>&1; then
  tf="$cache/terraform-$terraform_version"
  if [ ! -x "$tf" ]; then
    echo "terraform: building terraform $terraform_version from the Go module proxy (minutes)"
    start=$SECONDS
    build_in_place "github.com/hashicorp/terraform@$terraform_version" . "$tf"
    echo "terraform: built in $((SECONDS - start))s"
  fi
  ln -sfn "$tf" "$cache/terraform"
fi

coder_bin="$cache/$(versioned "$coder_provider")"
if [ ! -x "$coder_bin" ]; then
  echo "terraform: building $coder_provider (minutes the first time)"
  start=$SECONDS
  build_in_place "$coder_provider" . "$coder_bin"
  echo "terraform: built in $((SECONDS - start))s"
fi
ln -sfn "$coder_bin" "$cache/providers/terraform-provider-coder"

docker_bin="$cache/$(versioned "$docker_provider")"
if [ ! -x "$docker_bin" ]; then
  echo "terraform: building $docker_provider (many minutes the first time)"
  start=$SECONDS
  build_in_place "$docker_provider" . "$docker_bin"
  echo "terraform: built in $((SECONDS - start))s"
fi
ln -sfn "$docker_bin" "$cache/providers/terraform-provider-docker"
