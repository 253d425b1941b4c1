# Go layer: the Go toolchain and golangci-lint (sandlot verify: go test -json, golangci-lint).
ARG BASE=sandlot/base:latest
FROM ${BASE}
ARG GO_VERSION=1.24.4
ARG GOLANGCI_LINT_VERSION=v2.1.6
USER root
RUN set -eux; \
    arch="$(dpkg --print-architecture)"; \
    curl -fsSL "https://go.dev/dl/go${GO_VERSION}.linux-${arch}.tar.gz" | tar -xz -C /opt/sandlot; \
    ln -s /opt/sandlot/go/bin/go /opt/sandlot/go/bin/gofmt /opt/sandlot/bin/; \
    GOBIN=/opt/sandlot/bin /opt/sandlot/go/bin/go install \
        "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@${GOLANGCI_LINT_VERSION}"; \
    rm -rf /root/go /root/.cache
# Module and build caches belong to the sandbox user, not to the image.
ENV GOTOOLCHAIN=local GOPATH=/home/sandbox/go
LABEL dev.sandlot.layer.go="${GO_VERSION}"
USER sandbox
