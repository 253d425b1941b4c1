#!/usr/bin/env bash
# Build a sandlot sandbox image: the base runtime, then each tool layer on top, in order.
#   providers/docker/build.sh                          # base + go node python rust
#   providers/docker/build.sh --tag my/sandbox:py python
#   DOCKER_HOST=unix:///path/docker.sock providers/docker/build.sh ...
# Needs an engine that can reach the registries (debian, go.dev, nodesource, PyPI, rustup).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tag=sandlot/sandbox:latest
while [ $# -gt 0 ]; do
  case $1 in
    --tag) tag=$2; shift 2 ;;
    -h|--help) sed -n '2,6p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
layers=("$@")
[ ${#layers[@]} -gt 0 ] || layers=(go node python rust)
for layer in "${layers[@]}"; do
  [ -f "$here/layers/$layer.Dockerfile" ] || { echo "no layer '$layer' in $here/layers" >&2; exit 2; }
done
docker build -f "$here/base.Dockerfile" -t sandlot/base:latest "$here"
current=sandlot/base:latest
for layer in "${layers[@]}"; do
  next="sandlot/build-${layer}:latest"
  docker build -f "$here/layers/$layer.Dockerfile" --build-arg "BASE=$current" -t "$next" "$here"
  current=$next
done
docker tag "$current" "$tag"
echo "built $tag (base + ${layers[*]})"
