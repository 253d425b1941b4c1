"""The coder backend: sandboxes in Coder workspaces, driven through the `coder` CLI.

    import sandlot

    provider = sandlot.coder(template="docker", on_close="delete")     # create mode
    provider = sandlot.coder(workspace="alice/dev", on_close="leave")  # attach mode
    async with provider.session() as sandbox:
        await sandbox.exec("make test", on_stdout=print)

Importing this package costs nothing: the provider (asyncssh, tenacity) loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import SecretStr, TypeAdapter, ValidationError

from ...errors import ConfigurationError
from .options import (
    CoderAttachOptions,
    CoderCreateOptions,
    CoderOptions,
    OnClose,
    ParameterValue,
    describe_validation_error,
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
    env: dict[str, str] | None = None,
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
) -> CoderProvider:
    """A provider of sandboxes in Coder workspaces.

    Give exactly one of `template` (create a new workspace, with the create-mode options) or
    `workspace` (attach to `name`, `owner/name` or a UUID; started if stopped). `on_close`
    (`"delete"`, `"stop"` or `"leave"`) is required: it is what `close()` does to the workspace.
    Options are checked here, before any `coder` command runs; a bad one raises
    `ConfigurationError` naming it. See `CoderCreateOptions` / `CoderAttachOptions` for each.
    """
    given = {
        "type": "coder",
        "on_close": on_close,
        "template": template,
        "workspace": workspace,
        "template_version": template_version,
        "parameters": parameters,
        "parameter_file": parameter_file,
        "preset": preset,
        "organization": organization,
        "workspace_name": workspace_name,
        "use_parameter_defaults": use_parameter_defaults or None,
        "owner": owner,
        "agent": agent,
        "workdir": workdir,
        "env": env,
        "coder_url": coder_url,
        "session_token": session_token,
        "coder_binary": coder_binary,
        "build_timeout": build_timeout,
        "ready_timeout": ready_timeout,
        "ssh_ready_timeout": ssh_ready_timeout,
        "connect_timeout": connect_timeout,
        "transient_retry_timeout": transient_retry_timeout,
        "keepalive_interval": keepalive_interval,
        "keepalive_count_max": keepalive_count_max,
    }
    if isinstance(session_token, SecretStr):
        given["session_token"] = session_token.get_secret_value()
    data = {key: value for key, value in given.items() if value is not None}
    # Name what does not belong to the chosen mode plainly, instead of "extra input".
    create_only = ("template_version", "parameters", "parameter_file", "preset",
                   "organization", "workspace_name", "use_parameter_defaults")
    if workspace is not None and template is None:
        wrong = [key for key in create_only if key in data]
        if wrong:
            verb = "apply" if len(wrong) > 1 else "applies"
            raise ConfigurationError(
                f"{', '.join(wrong)} only {verb} when creating a workspace from a template; "
                "drop them to attach to an existing workspace"
            )
    if template is not None and workspace is None and "owner" in data:
        raise ConfigurationError(
            "owner only applies when attaching to an existing workspace (workspace=...); a "
            "new workspace is always yours"
        )
    try:
        options = _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ConfigurationError(
            f"invalid coder options: {describe_validation_error(exc)}"
        ) from None
    return options.build()
