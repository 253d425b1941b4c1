"""The docker backend: a sandbox is one container, driven through the `docker` CLI.

    provider = sandlot.docker(image="python:3.12-slim", on_close="delete")
    async with provider.session() as sandbox:
        await sandbox.exec("python -V")
"""

from __future__ import annotations

from typing import Any

from .options import DockerMount, DockerOptions, OnClose
from .provider import DockerProvider
from .sandbox import DockerSandbox


def docker(image: str | None = None, *, on_close: OnClose, **options: Any) -> DockerProvider:
    """A provider of Docker-container sandboxes.

    `on_close` is required (`delete`, `stop` or `leave`); every other option is a field of
    `DockerOptions` (attach, name, workdir, env, mounts, user, network, memory, cpus,
    pids_limit, keepalive_interval, keepalive_count_max, docker_host, context, docker_binary,
    pull, init). Bad options raise
    `ConfigurationError`.
    """
    from pydantic import ValidationError

    from ...errors import ConfigurationError

    try:
        opts = DockerOptions(image=image, on_close=on_close, **options)
    except ValidationError as exc:
        raise ConfigurationError(f"invalid docker options: {exc}") from None
    return opts.build()


__all__ = ["DockerMount", "DockerOptions", "DockerProvider", "DockerSandbox", "docker"]
