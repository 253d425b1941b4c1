"""The parts of coder's JSON that sandlot reads, as tolerant pydantic models.

Shapes follow codersdk (codersdk/users.go for `whoami`, codersdk/workspaces.go,
codersdk/workspacebuilds.go and codersdk/workspaceagents.go for `list`). Unknown fields are
ignored and state fields are plain strings, so a newer coder that adds a field or a state value
does not break parsing; the sets of values sandlot acts on are the constants below.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

# codersdk/workspaceagents.go: WorkspaceAgentStatus.
AGENT_CONNECTED = "connected"
# codersdk/workspaceagents.go: WorkspaceAgentLifecycle.
LIFECYCLE_READY = "ready"
LIFECYCLE_START_TIMEOUT = "start_timeout"
LIFECYCLE_START_ERROR = "start_error"
#: The "shutting down" family: the agent is going away, waiting will not help.
LIFECYCLE_SHUTTING_DOWN = frozenset({"shutting_down", "shutdown_timeout", "shutdown_error", "off"})
# codersdk/workspacebuilds.go: WorkspaceStatus and ProvisionerJobStatus.
BUILD_RUNNING = "running"
BUILD_FAILED = frozenset({"failed", "canceled"})
BUILD_IN_PROGRESS = frozenset({"pending", "starting", "stopping", "deleting", "canceling"})
JOB_FAILED = frozenset({"failed", "canceled"})
JOB_IN_PROGRESS = frozenset({"pending", "running", "canceling"})


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class WhoAmI(_Model):
    """One element of `coder whoami -o json` (an array with one object)."""

    url: str = ""
    username: str
    user_id: str = ""
    organization_ids: list[str] = Field(default_factory=list)


class Agent(_Model):
    """A workspace agent (codersdk.WorkspaceAgent), as `coder list -o json` shows it."""

    id: str = ""
    name: str
    status: str = ""
    lifecycle_state: str = ""
    directory: str = ""
    expanded_directory: str = ""
    operating_system: str = ""
    troubleshooting_url: str = ""


class Resource(_Model):
    """A provisioned resource; only agent-bearing ones matter here."""

    name: str = ""
    type: str = ""
    agents: list[Agent] | None = None  # omitted when empty


class Job(_Model):
    status: str = ""
    error: str = ""


class Build(_Model):
    """A workspace build (codersdk.WorkspaceBuild)."""

    transition: str = ""
    status: str = ""
    job: Job = Field(default_factory=Job)
    resources: list[Resource] | None = None


class Workspace(_Model):
    """A workspace (codersdk.Workspace)."""

    id: str
    name: str
    owner_name: str = ""
    owner_id: str = ""
    template_name: str = ""
    organization_name: str = ""
    latest_build: Build

    @property
    def reference(self) -> str:
        """`owner/name`: accepted by every lifecycle command and by `coder ssh`."""
        return f"{self.owner_name}/{self.name}" if self.owner_name else self.name

    @property
    def agents(self) -> list[Agent]:
        """Every agent of the latest build, in resource order."""
        found: list[Agent] = []
        for resource in self.latest_build.resources or []:
            found.extend(resource.agents or [])
        return found

    @property
    def build_in_progress(self) -> bool:
        return (
            self.latest_build.status in BUILD_IN_PROGRESS
            or self.latest_build.job.status in JOB_IN_PROGRESS
        )

    @property
    def build_failed(self) -> bool:
        return (
            self.latest_build.status in BUILD_FAILED or self.latest_build.job.status in JOB_FAILED
        )


class ParseError(ValueError):
    """The CLI printed something that is not the JSON sandlot expects."""


_WHOAMI = TypeAdapter(list[WhoAmI])
_WORKSPACES = TypeAdapter(list[Workspace])


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ParseError(f"{what}: output is not JSON ({exc}): {text[:200]!r}") from None


def parse_whoami(text: str) -> WhoAmI:
    """`coder whoami -o json` output -> the current user."""
    try:
        users = _WHOAMI.validate_python(_load(text, "coder whoami"))
    except ValidationError as exc:
        raise ParseError(f"coder whoami: unexpected JSON shape: {exc}") from None
    if not users:
        raise ParseError("coder whoami: empty user list")
    return users[0]


def parse_workspaces(text: str) -> list[Workspace]:
    """`coder list -o json` output -> workspaces. Empty output means none (older releases)."""
    if not text.strip():
        return []
    try:
        return _WORKSPACES.validate_python(_load(text, "coder list"))
    except ValidationError as exc:
        raise ParseError(f"coder list: unexpected JSON shape: {exc}") from None


# cli/whoami.go before `-o` existed (e.g. v2.26): "Coder is running at <url>, You're
# authenticated as <username> !", possibly with terminal styling around the two values.
_WHOAMI_TEXT = re.compile(r"running at (\S+), You're authenticated as (\S+) !")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def parse_whoami_text(text: str) -> WhoAmI:
    """Plain `coder whoami` output (releases without `-o json`) -> the current user."""
    match = _WHOAMI_TEXT.search(_ANSI.sub("", text))
    if match is None:
        raise ParseError(f"coder whoami: unexpected output: {text[:200]!r}")
    return WhoAmI(url=match.group(1), username=match.group(2))
