# sandlot sandbox base runtime: what EVERY sandlot container needs, and nothing language-specific.
#
# sandlot drives a container with `docker exec ... sh -c LINE` and copies with tar, so the base
# needs a POSIX sh, tar, coreutils and sleep (the keep-alive command); `sudo` lets
# exec(..., sudo=True) work for the non-root user. Language toolchains come as layers on top
# (layers/*.Dockerfile), see README.md.
ARG DEBIAN=bookworm-slim
FROM debian:${DEBIAN}

RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends \
        ca-certificates curl git sudo tar xz-utils gzip bzip2 unzip procps \
        build-essential pkg-config; \
    rm -rf /var/lib/apt/lists/*

# The sandbox user: uid 1000, passwordless sudo (the sandbox is the isolation boundary).
RUN set -eux; \
    useradd --create-home --uid 1000 --shell /bin/bash sandbox; \
    echo 'sandbox ALL=(ALL) NOPASSWD:ALL' > /etc/sudoers.d/sandbox; \
    chmod 0440 /etc/sudoers.d/sandbox; \
    install -d -o sandbox -g sandbox /workspace

# Tool layers install into /opt/sandlot/<tool> and put their bin on this PATH.
ENV PATH=/opt/sandlot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8
RUN install -d /opt/sandlot/bin

LABEL org.opencontainers.image.title="sandlot sandbox base" \
      dev.sandlot.layers="base"
WORKDIR /workspace
USER sandbox
CMD ["sleep", "infinity"]
