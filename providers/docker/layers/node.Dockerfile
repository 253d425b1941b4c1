# Node layer: Node.js with npm, plus TypeScript and ESLint for projects that do not pin their own
# (sandlot verify prefers the project's node_modules/.bin when present).
ARG BASE=sandlot/base:latest
FROM ${BASE}
ARG NODE_MAJOR=22
USER root
RUN set -eux; \
    curl -fsSL "https://deb.nodesource.com/setup_${NODE_MAJOR}.x" | bash -; \
    apt-get install -y --no-install-recommends nodejs; \
    rm -rf /var/lib/apt/lists/*; \
    npm install -g --no-fund --no-audit typescript eslint; \
    npm cache clean --force
LABEL dev.sandlot.layer.node="${NODE_MAJOR}"
USER sandbox
