"""Options of the docker backend (pydantic; part of `sandlot.config.ProviderConfig`).

Kept free of subprocess and provider imports so `sandlot.config` can load it cheaply.
"""

from __future__ import annotations

import re
import unicodedata
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from ..._redacted import RedactedModel
from ...secrets import EnvText, Secret

if TYPE_CHECKING:
    from .provider import DockerProvider

OnClose = Literal["delete", "stop", "leave"]

_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*\Z")
_MEMORY = re.compile(r"[0-9]+[bkmgBKMG]?\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: Unicode categories a `security_opt` value must not hold: control characters (NUL, newline,
#: DEL, C1), invisible format characters, and the line and paragraph separators.
_UNPRINTED = frozenset({"Cc", "Cf", "Zl", "Zp"})


def _check_security_opt(value: str) -> str:
    # The message names the rule; pydantic's location names the entry (security_opt.1), and
    # the value is never repeated (adr/0035).
    if not value:
        raise ValueError(
            "a security option must not be empty; give a docker --security-opt value such as "
            "seccomp=unconfined, or leave the entry out"
        )
    if value.startswith("-"):
        raise ValueError(
            "a security option must not start with '-': give the value alone "
            "(seccomp=unconfined), not a flag"
        )
    if any(unicodedata.category(char) in _UNPRINTED for char in value):
        raise ValueError(
            "a security option must not contain control or invisible characters (NUL, a "
            "newline, ...); remove them"
        )
    return value


_SecurityOpt = Annotated[str, AfterValidator(_check_security_opt)]


class DockerMount(BaseModel):
    """A host directory or file bind-mounted into the container."""

    model_config = ConfigDict(extra="forbid")

    source: str
    """Absolute host path; it must exist when the sandbox is created."""
    target: str
    """Absolute path inside the container."""
    read_only: bool = True
    """Mounted read-only unless set to False: a sandbox writes to the host only when asked."""

    @model_validator(mode="before")
    @classmethod
    def _from_string(cls, value: Any) -> Any:
        # "host:container[:ro|rw]", the short form the docker CLI users know.
        if isinstance(value, str):
            parts = value.split(":")
            if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
                raise ValueError("a mount must be 'HOST:CONTAINER' or 'HOST:CONTAINER:ro|rw'")
            mode = parts[2] if len(parts) == 3 else "ro"
            return {"source": parts[0], "target": parts[1], "read_only": mode == "ro"}
        return value

    @field_validator("source", "target")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("mount paths must be absolute")
        if "," in value or "\0" in value:
            raise ValueError("a mount path must not contain ',' or NUL")
        return value


class DockerOptions(RedactedModel):
    """Options of the docker backend: one container per sandbox, driven by the docker CLI."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["docker"] = "docker"
    image: str | None = None
    """Image to run (must exist locally or be pullable by the engine). Required unless `attach`."""
    on_close: OnClose
    """What close() does to the container: `delete` (docker rm -f), `stop` (docker stop; it
    can be started again), or `leave` it running. Required: there is no safe default."""
    attach: str | None = None
    """Name or id of an existing container to use instead of creating one (it is started if
    stopped). `on_close` then applies to THAT container."""
    name: str | None = None
    """Container name; default `sandlot-<8 hex>`."""
    workdir: str = "/workspace"
    """The sandbox's worktree inside the container (created if missing)."""
    env: dict[str, EnvText] = Field(default_factory=dict)
    """Environment of the container (every command inherits it)."""
    mounts: list[DockerMount] = Field(default_factory=list)
    """Bind mounts: {source, target, read_only} or 'HOST:CONTAINER[:ro|rw]' (read-only default)."""
    user: str | None = None
    """User commands run as (`name`, `uid` or `uid:gid`); default: the image's user. Also
    applies to the commands in an attached container."""
    network: str = "none"
    """Docker network mode; `none` (default) gives the sandbox no network at all."""
    memory: str | None = None
    """Memory limit, e.g. `512m` or `2g`."""
    cpus: float | None = Field(default=None, gt=0)
    """CPU limit, e.g. 1.5."""
    pids_limit: int | None = Field(default=None, gt=0)
    """Maximum number of processes in the container."""
    security_opt: list[_SecurityOpt] = Field(default_factory=list)
    """`docker run --security-opt` values, passed in this order, e.g. `seccomp=unconfined`
    (Rust coverage needs it: tarpaulin's ptrace engine calls `personality(ADDR_NO_RANDOMIZE)`,
    which Docker's default seccomp profile refuses), `no-new-privileges`, `apparmor=PROFILE`.
    Empty (default): the engine's own profiles apply. Each value is checked before anything is
    created: not empty, no leading `-`, no control characters; the engine judges the rest."""
    keepalive_interval: float = Field(default=5.0, gt=0)
    """Seconds between checks of the container's state while a command runs. A container
    that stays paused (`docker pause`, a frozen cgroup) fails every command in flight with
    `SandboxPausedError` (a `ConnectionLostError`) within
    `keepalive_interval * (keepalive_count_max + 1)` seconds instead of hanging; a new call
    on a paused container fails at once; once unpaused, the next call works."""
    keepalive_count_max: int = Field(default=3, ge=1)
    """Consecutive checks that must see the container paused before calls fail."""
    docker_host: str | None = None
    """Engine address (`unix:///path/docker.sock`, `tcp://...`); default: the client's own."""
    context: str | None = None
    """Docker CLI context to use instead of `docker_host`."""
    docker_binary: str = "docker"
    """The docker client program (a name on PATH or a path)."""
    pull: Literal["never", "missing"] = "never"
    """`never` (default): the image must already be in the engine's local store, so creating a
    sandbox never reaches a registry; `missing`: let the engine pull it when absent."""
    init: bool = True
    """Run docker's init (tini) as PID 1, so killed commands' orphans are reaped."""
    session_helper: bool = True
    """Run commands, forwarded connections and the file tools over one long-lived helper
    process in the container (python3 from the image, standard library only; adr/0042,
    adr/0043) instead of one `docker exec` each. Without a usable python3 it stays off by itself;
    False turns it off."""
    forward_handover: bool = True
    """With the session helper on an engine reached over a Unix socket: mount a directory of
    sandlot's, read-only, at `/run/sandlot-forward` in a new container, through which each
    forwarded connection's socket is handed to the helper itself, so forwarded bytes skip the
    engine's exec stream (adr/0055). An engine in another kernel (a VM) is detected at the
    first forward and the helper's stream is used. False: no mount; forwards take the stream."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, value: str | None) -> str | None:
        if value is not None and not _NAME.match(value):
            raise ValueError("a container name must match [a-zA-Z0-9][a-zA-Z0-9_.-]*")
        return value

    @field_validator("workdir")
    @classmethod
    def _check_workdir(cls, value: str) -> str:
        if not value.startswith("/") or "\0" in value:
            raise ValueError("workdir must be an absolute path inside the container")
        return value

    @field_validator("memory")
    @classmethod
    def _check_memory(cls, value: str | None) -> str | None:
        if value is not None and not _MEMORY.match(value):
            raise ValueError("memory must look like 512m or 2g")
        return value

    @field_validator("env")
    @classmethod
    def _check_env(cls, value: dict[str, str | Secret]) -> dict[str, str | Secret]:
        for key, item in value.items():
            if not _ENV_NAME.match(key):
                raise ValueError(
                    f"invalid environment variable name {key!r}: names must match "
                    "[A-Za-z_][A-Za-z0-9_]*; rename the variable"
                )
            if isinstance(item, str) and "\0" in item:  # a Secret never holds one
                raise ValueError(f"environment variable {key} contains a NUL byte; remove it")
        return value

    @model_validator(mode="after")
    def _one_source(self) -> DockerOptions:
        if (self.image is None) == (self.attach is None):
            raise ValueError(
                "give exactly one of `image` (create a container) or `attach` (use an existing "
                "one by name or id)"
            )
        if self.docker_host is not None and self.context is not None:
            raise ValueError("give `docker_host` or `context`, not both")
        if self.attach is not None:
            # Creation options would be silently ignored on an existing container.
            ignored = [
                f
                for f in ("name", "memory", "cpus", "pids_limit")
                if getattr(self, f) is not None
            ] + [f for f in ("env", "mounts", "security_opt") if getattr(self, f)]
            if self.network != "none":
                ignored.append("network")
            if ignored:
                verb, pronoun = ("apply", "they") if len(ignored) > 1 else ("applies", "it")
                raise ValueError(
                    f"{', '.join(ignored)} only {verb} when creating a container; {pronoun} "
                    "cannot change an attached one"
                )
        return self

    def build(self) -> DockerProvider:
        from .provider import DockerProvider

        return DockerProvider(self)
