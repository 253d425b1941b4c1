#!/usr/bin/env bash
# The Docker engine the docker backend's tests start themselves (tests/docker_engine.py):
# Debian's docker.io (dockerd 20.10, containerd, runc, docker-init) plus a static busybox for
# the offline test image. Installing never starts a daemon, and nothing here runs one.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ ! -x /usr/sbin/dockerd ] || [ ! -x /usr/bin/containerd ] || [ ! -x /usr/bin/docker-init ]; then
  # Package scripts must not start the system's docker service: the tests run their own
  # daemon on their own socket. policy-rc.d answering 101 tells invoke-rc.d "do not start".
  made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    made_policy=1
  fi
  trap '[ -n "$made_policy" ] && rm -f /usr/sbin/policy-rc.d' EXIT
  scripts/lib/apt-ensure docker.io
fi

# busybox-static conflicts with Debian's `busybox` package (which other parts of the suite
# install), so its binary is taken from the .deb without installing it.
cache=${SANDLOT_CACHE:-$HOME/.cache/sandlot}
bb=$cache/busybox-static/bin/busybox
if [ ! -x "$bb" ]; then
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download -q busybox-static >/dev/null 2>&1) || {
    apt-get update -qq && (cd "$tmp" && apt-get download -q busybox-static >/dev/null); }
  mkdir -p "$cache/busybox-static/bin"
  dpkg-deb -x "$tmp"/busybox-static_*.deb "$tmp/x"
  install -m 755 "$tmp/x/bin/busybox" "$bb.part" && mv "$bb.part" "$bb"
  rm -rf "$tmp"
fi
