"""The docker backend: a sandbox is one container, driven through the `docker` CLI.

    provider = sandlot.docker(image="python:3.12-slim", on_close="delete")
    async with provider.session() as sandbox:
        await sandbox.exec("python -V")
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import TypeAdapter

from ..._options import options_from
from ...secrets import Secret
from .options import DockerMount, DockerOptions, OnClose
from .provider import DockerProvider
from .sandbox import DockerSandbox


def docker(
    image: str | None = None,
    *,
    on_close: OnClose,
    attach: str | None = None,
    name: str | None = None,
    workdir: str = "/workspace",
    env: Mapping[str, str | Secret] | None = None,
    mounts: list[DockerMount | str | dict[str, Any]] | None = None,
    user: str | None = None,
    network: str = "none",
    memory: str | None = None,
    cpus: float | None = None,
    pids_limit: int | None = None,
    security_opt: Sequence[str] | None = None,
    keepalive_interval: float = 5.0,
    keepalive_count_max: int = 3,
    docker_host: str | None = None,
    context: str | None = None,
    docker_binary: str = "docker",
    pull: Literal["never", "missing"] = "never",
    init: bool = True,
    session_helper: bool = True,
    forward_handover: bool = True,
) -> DockerProvider:
    """A provider of Docker-container sandboxes.

    `on_close` is required (`delete`, `stop` or `leave`); every other option is the field of
    `DockerOptions` of the same name (see there). Bad options raise `ConfigurationError`.
    """
    return options_from(_ADAPTER, locals(), what="docker options").build()


_ADAPTER: TypeAdapter[DockerOptions] = TypeAdapter(DockerOptions)


__all__ = ["DockerMount", "DockerOptions", "DockerProvider", "DockerSandbox", "docker"]
