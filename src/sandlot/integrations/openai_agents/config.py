"""Options, session state and the provider configurations behind them (no I/O here).

The options carry a sandlot provider configuration: the same JSON as `--provider-config`
(src/sandlot/config.py), validated when the options are made, before anything is created.
The session state keeps what a later process needs to find the same sandbox again: that
configuration without its secrets, the backend, and the sandbox's reference (a local
worktree path, a Docker container name, a Coder workspace `owner/name`). See adr/0044.
"""

from __future__ import annotations

from typing import Any, Literal

from agents.sandbox.session.sandbox_client import BaseSandboxClientOptions
from agents.sandbox.session.sandbox_session_state import SandboxSessionState
from pydantic import ConfigDict, Field, field_validator

from ...config import parse_config
from ...errors import ConfigurationError
from ...sandbox import Sandbox

#: Fields of a provider configuration that hold a secret: never in options or state (both are
#: made for JSON round-trips: run states, logs, files). The Coder token comes from the
#: client (`SandlotSandboxClient(session_token=...)`) or the environment, as for the CLI.
SECRET_FIELDS = ("session_token",)

# What an attached sandbox keeps of its creating configuration, per backend: the fields that
# still mean something for an existing sandbox (creation-only fields are refused on attach).
_LOCAL_ATTACH_KEEP = ("type", "on_close", "isolation", "env", "inherit_env")
_DOCKER_ATTACH_KEEP = ("type", "on_close", "user", "workdir", "keepalive_interval",
                       "keepalive_count_max", "docker_host", "context", "docker_binary", "pull",
                       "init")
_CODER_CREATE_ONLY = ("template", "template_version", "parameters", "parameter_file", "preset",
                      "organization", "workspace_name", "use_parameter_defaults", "owner",
                      "workspace")


def checked_provider(config: dict[str, Any]) -> dict[str, Any]:
    """`config` validated as a sandlot provider configuration; a typed error (that quotes no
    value) before anything is created."""
    secrets = [key for key in SECRET_FIELDS if config.get(key) is not None]
    if secrets:
        raise ConfigurationError(
            f"provider configuration: {', '.join(secrets)} must not be in the options (they "
            "are serialized with the run state); pass it to SandlotSandboxClient("
            "session_token=...) or set CODER_SESSION_TOKEN")
    parse_config(config)
    return dict(config)


class SandlotSandboxClientOptions(BaseSandboxClientOptions):
    """Options of `SandlotSandboxClient`: which sandlot provider makes the sandbox."""

    type: Literal["sandlot"] = "sandlot"
    provider: dict[str, Any] = Field(default_factory=lambda: {"type": "local"})
    """A sandlot provider configuration (the JSON of `--provider-config`): local, docker or
    coder, with its `on_close` (what `client.delete()` does to the sandbox)."""
    exposed_ports: tuple[int, ...] = ()
    """Sandbox ports `session.resolve_exposed_port()` may forward to this host."""

    # A refused configuration never shows its input (it may hold what should not be there).
    model_config = ConfigDict(hide_input_in_errors=True)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Made in code: the typed error itself, not pydantic's wrapping of it.
        provider = kwargs.get("provider", args[0] if args else None)
        if isinstance(provider, dict):
            checked_provider(provider)
        super().__init__(*args, **kwargs)

    @field_validator("provider")
    @classmethod
    def _provider(cls, value: dict[str, Any]) -> dict[str, Any]:
        return checked_provider(value)


class SandlotSandboxSessionState(SandboxSessionState):
    """What `resume` needs to find the sandbox again, or make a new one like it."""

    type: Literal["sandlot"] = "sandlot"
    provider: dict[str, Any]
    """The creating provider configuration, without secrets."""
    backend: str
    """`local`, `docker` or `coder`."""
    sandbox_ref: str
    """How to attach to the sandbox: its worktree (local), container name (docker) or
    workspace `owner/name` (coder)."""
    worktree: str
    """The sandbox's worktree when the state was written."""
    root_is_worktree: bool = True
    """The workspace root follows the sandbox's worktree (a new sandbox may have another)."""


def sandbox_ref(sandbox: Sandbox) -> str:
    """The name `attach` takes for this sandbox."""
    return sandbox.worktree if sandbox.provider == "local" else sandbox.name


def attach_config(config: dict[str, Any], backend: str, ref: str,
                  worktree: str) -> dict[str, Any]:
    """The configuration that attaches to the sandbox `ref` made by `config`, keeping its
    `on_close` (so `delete` on a resumed session does what the first session's would) and its
    worktree (a Coder agent's directory is known only at creation)."""
    if backend == "local":
        kept = {k: v for k, v in config.items() if k in _LOCAL_ATTACH_KEEP}
        return {**kept, "attach": ref}
    if backend == "docker":
        kept = {k: v for k, v in config.items() if k in _DOCKER_ATTACH_KEEP}
        return {**kept, "attach": ref, "workdir": worktree}
    if backend == "coder":
        kept = {k: v for k, v in config.items() if k not in _CODER_CREATE_ONLY}
        return {**kept, "workspace": ref, "workdir": worktree}
    raise ConfigurationError(f"session state names an unknown sandlot backend {backend!r}; "
                             "expected local, docker or coder")


def with_secrets(config: dict[str, Any], session_token: str | None) -> dict[str, Any]:
    """`config` with the client's Coder token added (coder configurations only)."""
    if session_token is not None and config.get("type") == "coder":
        return {**config, "session_token": session_token}
    return config
