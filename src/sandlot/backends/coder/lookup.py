"""Finding workspaces through `coder list -o json`: by owner and name, by UUID, and waiting
until no build is in progress."""

from __future__ import annotations

import time

import anyio

from ...errors import CoderWorkspaceNotFoundError
from .cli import CoderCLI
from .models import WhoAmI, Workspace
from .options import CoderAttachOptions, _is_uuid

#: First and longest pause between two `coder list` polls.
POLL_FIRST = 0.2
POLL_MAX = 2.0


async def find_workspace(cli: CoderCLI, *, owner: str, name: str) -> Workspace | None:
    """The workspace `owner/name`, or None. The owner's list is shared by concurrent lookups
    (N sandboxes polling at once make one `coder list`); the exact match is ours."""
    for workspace in await cli.owned_workspaces(owner):
        if workspace.name.lower() == name.lower() and (
            workspace.owner_name.lower() == owner.lower()
        ):
            return workspace
    return None


async def resolve_workspace(cli: CoderCLI, opts: CoderAttachOptions, me: WhoAmI) -> Workspace:
    """The workspace to attach to, from a name, `owner/name` or UUID."""
    reference = opts.reference()
    if _is_uuid(reference):
        for workspace in await cli.list_workspaces(all_users=True):
            if workspace.id.lower() == reference.lower():
                return workspace
        found = None
    else:
        owner, _, name = reference.rpartition("/")
        found = await find_workspace(cli, owner=owner or me.username, name=name)
    if found is None:
        raise CoderWorkspaceNotFoundError(
            f"no workspace {reference!r} visible to {me.username!r}; check the name with "
            "`coder list` (another user's workspace is 'owner/name')",
            sandbox=reference,
        )
    return found


async def settle(cli: CoderCLI, owner: str, name: str, timeout: float) -> None:
    """Wait until no build of the workspace is in progress (a new build would be refused)."""
    deadline = time.monotonic() + timeout
    delay = POLL_FIRST
    while time.monotonic() < deadline:
        workspace = await find_workspace(cli, owner=owner, name=name)
        if workspace is None or not workspace.build_in_progress:
            return
        await anyio.sleep(delay)
        delay = min(delay * 1.5, POLL_MAX)


