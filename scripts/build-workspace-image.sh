#!/usr/bin/env bash
# The template tier's workspace image (tests/template), made from Debian's packages only: no
# container registry and no language download site is reachable here, so image/Dockerfile
# (which downloads Go, Node, rustup, golangci-lint) cannot be built. Instead:
#   debootstrap (Debian's mirror) -> apt-get install of Debian's Go, Node, Python, Rust, git
#   inside the root -> the verify tools Debian does not package (golangci-lint, ruff, uv) from
#   the pinned, pip-installed copies setup already made -> a `coder` user (uid 1000) with
#   passwordless sudo, as image/Dockerfile makes -> one tar, which the tests `docker import`.
#
# Cached: ~/.cache/sandlot/workspace-image/<recipe hash>/rootfs.tar (instant once built).
# Prints the tar's path (`--cached`: only when already built, else exit 3). SANDLOT_SKIP_WORKSPACE_IMAGE=1 skips it (the tier then skips, or
# fails under CI=true).
set -euo pipefail
# Everything runs from main(), read whole before it starts: editing this file while a build
# runs cannot change what the running build does.
main() {
cd "$(dirname "$0")/.."
suite=trixie   # Go 1.24, Rust 1.85, Node 20, Python 3.13: new enough for the examples
mirror=${SANDLOT_DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=(ca-certificates curl git sudo bash tar coreutils procps iproute2 less
  golang-go nodejs npm python3 python3-venv python3-pytest mypy rustc cargo rustfmt rust-clippy
  build-essential)
recipe=$( { echo "$suite ${packages[*]}"; sed -n '/^# ---- recipe/,$p' "$0"; } | sha1sum | cut -c1-12)
cache=${SANDLOT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sandlot}/workspace-image
out=$cache/$recipe/rootfs.tar
if [ -f "$out" ]; then echo "$out"; exit 0; fi
# --cached: only say where the cached image is (exit 3 when it is not built).
[ "${1:-}" = --cached ] && exit 3
log() { echo "workspace-image: $*" >&2; }
# ---- recipe (changing anything below rebuilds the image) ----
[ "$(id -u)" -eq 0 ] || { log "needs root (debootstrap, chroot)"; exit 1; }
scripts/lib/apt-ensure debootstrap >&2
venv=/opt/sandlot/verify-tools/venv
for tool in /opt/sandlot/verify-tools/bin/golangci-lint "$venv/bin/ruff"; do
  [ -x "$tool" ] || { log "missing $tool: run scripts/setup.d/40-verify-tools.sh first"; exit 1; }
done
uv=$(PATH=.tools/uv/bin:.venv/bin:$PATH command -v uv || true)
[ -n "$uv" ] || { log "missing uv: run scripts/setup.d/40-uv.sh first"; exit 1; }
mkdir -p "$cache/$recipe"
root=$(mktemp -d "$cache/$recipe/root.XXXXXX")
cleanup() {
  for m in proc sys dev/pts dev; do umount -l "$root/$m" 2>/dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT
start=$SECONDS
log "debootstrap $suite from $mirror (minutes the first time)"
nice -n 15 debootstrap --variant=minbase "$suite" "$root" "$mirror" >&2
log "debootstrap done in $((SECONDS - start))s; installing toolchains"
mount -t proc proc "$root/proc"
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  DEBIAN_FRONTEND=noninteractive LANG=C.UTF-8 "$@"; }
in_root apt-get update -qq >&2
nice -n 15 chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}" >&2
in_root apt-get clean
rm -rf "$root/var/lib/apt/lists/"*
install -m 0755 /opt/sandlot/verify-tools/bin/golangci-lint "$venv/bin/ruff" "$uv" "$root/usr/local/bin/"
in_root useradd --create-home --uid 1000 --shell /bin/bash coder
echo 'coder ALL=(ALL) NOPASSWD:ALL' > "$root/etc/sudoers.d/coder"
chmod 0440 "$root/etc/sudoers.d/coder"
umount -l "$root/proc"
for tool in sh tar sha256sum bash python3 go node npm cargo golangci-lint pytest ruff mypy uv curl git; do
  in_root sh -c "command -v $tool" >/dev/null || { log "image lacks $tool"; exit 1; }
done
tar -C "$root" --numeric-owner -cf "$out.tmp" .
mv "$out.tmp" "$out"
log "built $out in $((SECONDS - start))s ($(du -sh "$out" | cut -f1))"
echo "$out"
}
main "$@"
