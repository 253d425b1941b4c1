# Python layer: CPython in a virtualenv that is the sandbox's default python3, with uv, pytest,
# ruff and mypy in it. The venv belongs to the sandbox user, so `python3 -m pip install` and
# `uv pip install` put a project's requirements next to pytest and mypy, which then see them.
ARG BASE=sandlot/base:latest
FROM ${BASE}
USER root
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends python3 python3-venv python3-dev; \
    rm -rf /var/lib/apt/lists/*; \
    python3 -m venv /opt/sandlot/venv; \
    /opt/sandlot/venv/bin/pip install --no-cache-dir uv pytest ruff mypy; \
    chown -R sandbox:sandbox /opt/sandlot/venv
ENV VIRTUAL_ENV=/opt/sandlot/venv \
    PATH=/opt/sandlot/venv/bin:/opt/sandlot/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL dev.sandlot.layer.python="system"
USER sandbox
