"""Shared by the subcommands, as coder's cli/root.go shares them: naming and resolving a
workspace (namedWorkspace, splitNamedWorkspace), and starting a build."""

from __future__ import annotations

import re

from .. import builds, state
from ..errors import CLIError, not_found
from ..session import Client, Invocation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAME_RE = re.compile(r"^[a-zA-Z0-9]+(?:-[a-zA-Z0-9]+)*$")  # codersdk/name.go UsernameValidRegex
UUID_RE = re.compile(r"^[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")


def split_named(identifier: str) -> tuple[str, str]:
    """cli/root.go splitNamedWorkspace: `name` (owner me) or `owner/name`."""
    parts = identifier.split("/")
    if len(parts) == 1:
        return "me", parts[0]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise CLIError(f'invalid workspace name: "{identifier}"')


def workspace_path(identifier: str) -> str:
    """The API path namedWorkspace requests (WorkspaceByOwnerAndName)."""
    owner, _, name = identifier.rpartition("/")
    return f"/api/v2/users/{owner or 'me'}/workspace/{name}"


def resolve_workspace(client: Client, identifier: str) -> dict[str, Any]:
    """namedWorkspace; also a workspace id when the accept_workspace_ids setting is on."""
    st = client.st
    if st["settings"].get("accept_workspace_ids") and UUID_RE.match(identifier):
        by_id: dict[str, Any] | None = st["workspaces"].get(identifier.lower())
        if by_id is not None and not by_id.get("deleted"):
            return by_id
    owner_ref, name = split_named(identifier)
    owner = state.user_by_ref(st, owner_ref, client.user)
    ws = state.find_workspace(st, owner["id"], name) if owner else None
    if ws is None:
        raise not_found()
    return ws


def owner_of(st: state.State, ws: dict[str, Any]) -> dict[str, Any]:
    return next(u for u in st["users"] if u["id"] == ws["owner_id"])


def begin(inv: Invocation, client: Client, workspace_id: str, transition: str) -> None:
    with state.locked(inv.root) as locked_state:
        ws = locked_state["workspaces"][workspace_id]
        builds.begin(locked_state, ws, transition, initiator_id=client.user["id"])


def wait_for_active_build(inv: Invocation, ws: dict[str, Any]) -> None:
    """The fake queues a new build behind an unfinished one instead of answering 409."""
    if not ws["build"].get("finalized"):
        builds.wait_until_complete(inv.root, ws["id"])
