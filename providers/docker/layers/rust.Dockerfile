# Rust layer: rustup's stable toolchain with clippy and rustfmt (sandlot verify:
# cargo test, cargo clippy --message-format=json).
ARG BASE=sandlot/base:latest
FROM ${BASE}
ARG RUST_TOOLCHAIN=stable
USER root
ENV RUSTUP_HOME=/opt/sandlot/rustup CARGO_HOME=/opt/sandlot/cargo
RUN set -eux; \
    curl -fsSL https://sh.rustup.rs | sh -s -- -y --no-modify-path --profile minimal \
        --default-toolchain "${RUST_TOOLCHAIN}" --component clippy --component rustfmt; \
    for tool in cargo rustc rustup cargo-clippy clippy-driver rustfmt cargo-fmt; do \
        ln -s "/opt/sandlot/cargo/bin/$tool" /opt/sandlot/bin/; done; \
    chmod -R a+rX /opt/sandlot/rustup /opt/sandlot/cargo
# The registry cache is the sandbox user's (CARGO_HOME above is read-only for it).
ENV CARGO_HOME=/home/sandbox/.cargo
LABEL dev.sandlot.layer.rust="${RUST_TOOLCHAIN}"
USER sandbox
