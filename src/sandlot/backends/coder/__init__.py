"""The coder backend: sandboxes in Coder workspaces, driven through the `coder` CLI.

    import sandlot

    provider = sandlot.coder(template="docker", on_close="delete")     # create mode
    provider = sandlot.coder(workspace="alice/dev", on_close="leave")  # attach mode
    async with provider.session() as sandbox:
        await sandbox.exec("make test", on_stdout=print)

Importing this package costs nothing: the provider (asyncssh, tenacity) loads on first use.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pydantic import SecretStr, TypeAdapter

from ..._options import options_from
from ...secrets import Secret
from .options import (
    CoderAttachOptions,
    CoderCreateOptions,
    CoderOptions,
    OnClose,
    ParameterValue,
)

if TYPE_CHECKING:
    from .provider import CoderProvider

__all__ = [
    "CoderAttachOptions",
    "CoderCreateOptions",
    "CoderOptions",
    "OnClose",
    "coder",
]

_ADAPTER: TypeAdapter[CoderCreateOptions | CoderAttachOptions] = TypeAdapter(CoderOptions)


def coder(
    *,
    on_close: OnClose,
    template: str | None = None,
    workspace: str | None = None,
    template_version: str | None = None,
    parameters: dict[str, ParameterValue] | None = None,
    parameter_file: str | None = None,
    preset: str | None = None,
    organization: str | None = None,
    workspace_name: str | None = None,
    use_parameter_defaults: bool = False,
    owner: str | None = None,
    agent: str | None = None,
    workdir: str | None = None,
    env: Mapping[str, str | Secret] | None = None,
    coder_url: str | None = None,
    session_token: str | SecretStr | None = None,
    coder_binary: str = "coder",
    build_timeout: float | None = None,
    ready_timeout: float | None = None,
    ssh_ready_timeout: float | None = None,
    connect_timeout: float | None = None,
    transient_retry_timeout: float | None = None,
    keepalive_interval: float | None = None,
    keepalive_count_max: int | None = None,
    session_helper: bool = True,
) -> CoderProvider:
    """A provider of sandboxes in Coder workspaces.

    Give exactly one of `template` (create a new workspace, with the create-mode options) or
    `workspace` (attach to `name`, `owner/name` or a UUID; started if stopped). `on_close`
    (`"delete"`, `"stop"` or `"leave"`) is required: it is what `close()` does to the workspace.
    Options are checked here, before any `coder` command runs; a bad one raises
    `ConfigurationError` naming it. See `CoderCreateOptions` / `CoderAttachOptions` for each.
    """
    return options_from(_ADAPTER, locals(), what="coder options").build()
