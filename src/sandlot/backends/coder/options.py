"""Options of the coder backend: create a workspace from a template XOR attach to one.

Everything here is checked before any `coder` command runs, so a typo costs no workspace.
The two modes share `_CoderCommon`; `CoderOptions` is the discriminated union of both, told
apart by which of `template` / `workspace` is given (exactly one must be).
"""

from __future__ import annotations

import json
import posixpath
import re
import secrets
import uuid
from typing import TYPE_CHECKING, Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    SecretStr,
    Tag,
    field_validator,
    model_validator,
)

from ... import _shell
from ..._redacted import RedactedModel
from ...config_errors import describe
from ...errors import ConfigurationError, register_secret
from ...secrets import EnvText, Secret, reveal

if TYPE_CHECKING:
    from .provider import CoderProvider

OnClose = Literal["delete", "stop", "leave"]
ParameterValue = str | int | float | bool | list[str]

# codersdk/name.go: names of users and workspaces are dash-separated alphanumerics, <= 32 chars.
_NAME = re.compile(r"[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*\Z")
_NAME_MAX = 32


def _check_name(value: str, what: str) -> str:
    if not _NAME.match(value) or len(value) > _NAME_MAX:
        raise ValueError(
            f"{what} is not a valid Coder name: use at most {_NAME_MAX} letters, "
            "digits and single dashes, not starting or ending with a dash"
        )
    return value


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def default_workspace_name() -> str:
    """`sandlot-<8 hex>`: unique enough per user, valid as a Coder name."""
    return f"sandlot-{secrets.token_hex(4)}"


class _CoderCommon(RedactedModel):
    """Options shared by both modes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: Literal["coder"] = "coder"
    on_close: OnClose
    """What `close()` does to the workspace: `delete` it, `stop` it, or `leave` it running.

    Required, with no default: Coder workspaces are persistent and may be someone's work, so
    the caller decides (see adr/ "required on_close")."""
    agent: str | None = None
    """The workspace agent to run commands on. Required when the workspace has several agents
    (the error lists their names); optional when it has one."""
    workdir: str | None = None
    """Absolute path of the sandbox worktree inside the workspace. Default:
    `<agent directory>/.sandlot/worktree`, else `$HOME/.sandlot/worktree`. Created if missing."""
    env: dict[str, EnvText] = Field(default_factory=dict)
    """Environment added to every command run in the workspace."""
    coder_url: str | None = None
    """Deployment URL, passed to the CLI as CODER_URL (default: the CLI's own login)."""
    session_token: SecretStr | None = None
    """Session token, passed to the CLI as CODER_SESSION_TOKEN only. Never printed or logged."""
    coder_binary: str = "coder"
    """The `coder` executable: a name looked up on PATH, or a path."""
    build_timeout: float = Field(default=1800.0, gt=0)
    """Seconds a `coder create` / `start` / `stop` / `delete` may take (they wait for the build)."""
    ready_timeout: float = Field(default=600.0, gt=0)
    """Seconds, after the build, for the agent to be `connected` with lifecycle `ready`."""
    ssh_ready_timeout: float = Field(default=60.0, gt=0)
    """Seconds to retry the first SSH round trip (a claimed prebuild can briefly route to an
    agent that is shutting down)."""
    connect_timeout: float = Field(default=30.0, gt=0)
    """Seconds one SSH connection attempt through `coder ssh --stdio` may take."""
    keepalive_interval: float = Field(default=15.0, gt=0)
    """Seconds between SSH keepalives. An agent that stops answering (frozen, or the network
    path black-holed) fails every call in flight with `ConnectionLostError` after
    `keepalive_interval * keepalive_count_max` seconds, never a hang; the next call
    reconnects."""
    keepalive_count_max: int = Field(default=4, ge=1)
    """Unanswered keepalives before the connection counts as lost."""
    session_helper: bool = True
    """Run sandlot's file tools in one long-lived python3 process per sandbox (the session
    helper, adr/0042) instead of one command per call; False: always one command per call.
    Without python3 in the sandbox the tools take the one-command path either way."""
    transient_retry_timeout: float = Field(default=120.0, ge=0)
    """Seconds to keep retrying, with backoff, a transient failure of the deployment while a
    workspace is made or found (rate limited, a proxy's 502/503/504, connection refused while
    coderd restarts). 0 turns the retries off."""

    @field_validator("agent")
    @classmethod
    def _agent_name(cls, value: str | None) -> str | None:
        if value is not None and (not value or re.search(r"[\s./]", value)):
            raise ValueError(
                "agent is not an agent name: give the bare name shown by "
                "`coder list` (no dots, slashes or spaces)"
            )
        return value

    @field_validator("workdir")
    @classmethod
    def _absolute_workdir(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith("/") or "\0" in value:
            raise ValueError(
                "workdir must be an absolute POSIX path inside the workspace (like "
                "/home/coder/project)"
            )
        return posixpath.normpath(value)

    @field_validator("env")
    @classmethod
    def _env_names(cls, value: dict[str, str | Secret]) -> dict[str, str | Secret]:
        try:
            _shell.validate_env(reveal(value))
            return value
        except ConfigurationError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("coder_url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                "coder_url must be an http(s) URL of the deployment, like "
                "https://coder.example.com"
            )
        return value

    @field_validator("session_token")
    @classmethod
    def _token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            secret = value.get_secret_value()
            if not secret.strip():
                raise ValueError("session_token is empty; omit it to use the CLI's own login")
            register_secret(secret)
        return value

    @field_validator("coder_binary")
    @classmethod
    def _binary(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("coder_binary is empty; give a name on PATH or a path")
        return value

    def build(self) -> CoderProvider:
        """The provider these options describe (imports the backend only now)."""
        from .provider import CoderProvider

        return CoderProvider(self)  # type: ignore[arg-type]


class CoderCreateOptions(_CoderCommon):
    """Create mode: a new workspace from a template, made by `coder create`."""

    template: str
    """Template name (or ID) to create the workspace from."""
    template_version: str | None = None
    """Template version name (`--template-version`); default: the active version."""
    parameters: dict[str, ParameterValue] = Field(default_factory=dict)
    """Rich parameter values, each passed as `--parameter name=value` (values stringified;
    booleans as true/false, lists as a JSON array)."""
    parameter_file: str | None = None
    """Host path of a YAML file of parameter values (`--rich-parameter-file`)."""
    preset: str | None = None
    """Template preset (`--preset`)."""
    organization: str | None = None
    """Organization name or ID (`--org`); default: the CLI's choice."""
    workspace_name: str | None = None
    """Name of the new workspace; default: a fresh `sandlot-<8 hex>` for every sandbox. A fixed
    name allows one sandbox at a time (Coder names are unique per owner)."""
    use_parameter_defaults: bool = False
    """Accept template defaults for parameters not given (`--use-parameter-defaults`), instead
    of failing on a parameter that has no value."""

    @model_validator(mode="before")
    @classmethod
    def _no_attach_options(cls, data: Any) -> Any:
        # Named plainly, instead of pydantic's "extra inputs are not permitted".
        if isinstance(data, dict) and data.get("owner") is not None:
            raise ValueError(
                "owner only applies when attaching to an existing workspace (workspace=...); a "
                "new workspace is always yours"
            )
        return data

    @field_validator("template")
    @classmethod
    def _template(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("template is empty; give the template name to create from")
        return value

    @field_validator("workspace_name")
    @classmethod
    def _workspace_name(cls, value: str | None) -> str | None:
        return _check_name(value, "workspace_name") if value is not None else None

    @field_validator("parameters")
    @classmethod
    def _parameter_names(cls, value: dict[str, ParameterValue]) -> dict[str, ParameterValue]:
        for name in value:
            if not name or "=" in name or name != name.strip():
                raise ValueError(
                    f"parameter name {name!r} is not usable: it must be non-empty, without "
                    "'=' or surrounding spaces"
                )
        return value

    @property
    def mode(self) -> Literal["create"]:
        return "create"

    def parameter_flags(self) -> list[str]:
        """`--parameter name=value` for every parameter, in the order given."""
        flags: list[str] = []
        for name, value in self.parameters.items():
            flags += ["--parameter", f"{name}={stringify_parameter(value)}"]
        return flags


#: Options of create mode only (`CoderAttachOptions` names them when given).
_CREATE_ONLY = ("template_version", "parameters", "parameter_file", "preset", "organization",
                "workspace_name", "use_parameter_defaults")


class CoderAttachOptions(_CoderCommon):
    """Attach mode: an existing workspace, started first if it is stopped."""

    workspace: str
    """The workspace: `name`, `owner/name`, or its UUID."""
    owner: str | None = None
    """Owner of the workspace, only with a bare `workspace` name (default: you)."""

    @model_validator(mode="before")
    @classmethod
    def _no_create_options(cls, data: Any) -> Any:
        # Named plainly, instead of pydantic's "extra inputs are not permitted". False is
        # use_parameter_defaults' own default, so passing it is no creation option.
        if not isinstance(data, dict):
            return data
        unset = {key for key in _CREATE_ONLY if data.get(key) is None or data.get(key) is False}
        wrong = [key for key in _CREATE_ONLY if key in data and key not in unset]
        if wrong:
            verb = "apply" if len(wrong) > 1 else "applies"
            raise ValueError(
                f"{', '.join(wrong)} only {verb} when creating a workspace from a template; "
                "drop them to attach to an existing workspace"
            )
        return {key: value for key, value in data.items() if key not in unset}

    @field_validator("workspace")
    @classmethod
    def _workspace(cls, value: str) -> str:
        if _is_uuid(value):
            return value
        owner, slash, name = value.rpartition("/")
        if slash:
            _check_name(owner, "workspace owner")
        _check_name(name, "workspace")
        return value

    @field_validator("owner")
    @classmethod
    def _owner(cls, value: str | None) -> str | None:
        return _check_name(value, "owner") if value is not None else None

    @model_validator(mode="after")
    def _owner_only_with_a_name(self) -> CoderAttachOptions:
        if self.owner is not None and ("/" in self.workspace or _is_uuid(self.workspace)):
            raise ValueError(
                "owner is only for a bare workspace name, but workspace is an owner/name or a "
                "UUID: drop owner, or give workspace='<owner>/<name>' alone"
            )
        return self

    @property
    def mode(self) -> Literal["attach"]:
        return "attach"

    def reference(self) -> str:
        """The reference the CLI accepts: `owner/name`, `name` or the UUID."""
        return f"{self.owner}/{self.workspace}" if self.owner else self.workspace


def stringify_parameter(value: ParameterValue) -> str:
    """How a parameter value is spelled on coder's command line."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return json.dumps(value)
    return str(value)


def _mode(value: Any) -> str | None:
    """Discriminator: which mode a raw configuration (or model) is in; None if ambiguous.

    It sees the raw input first, so it also registers a session token as a secret before any
    validation error could echo the input back.
    """
    if isinstance(value, dict):
        token = value.get("session_token")
        if isinstance(token, SecretStr):
            token = token.get_secret_value()
        if isinstance(token, str):
            register_secret(token)
        template, workspace = value.get("template"), value.get("workspace")
    else:
        template = getattr(value, "template", None)
        workspace = getattr(value, "workspace", None)
    if (template is None) == (workspace is None):
        return None
    return "create" if template is not None else "attach"


CoderOptions = Annotated[
    Annotated[CoderCreateOptions, Tag("create")] | Annotated[CoderAttachOptions, Tag("attach")],
    Discriminator(
        _mode,
        custom_error_type="coder_mode",
        custom_error_message=(
            "give exactly one of `template` (create a new workspace) or `workspace` "
            "(attach to an existing one)"
        ),
    ),
]
"""The coder backend's options: `CoderCreateOptions` XOR `CoderAttachOptions`."""


#: The one renderer of configuration errors, under the name this module gave it first.
describe_validation_error = describe
