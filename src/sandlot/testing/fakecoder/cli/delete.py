"""coder delete (cli/delete.go)."""

from __future__ import annotations

from .. import args, prompts, state
from ..session import Invocation, init_client
from .cliui import run_build, stamp
from .root import begin, owner_of, resolve_workspace, wait_for_active_build, workspace_path


def cmd_delete(inv: Invocation) -> int:
    """cli/delete.go: "<owner>/<name> has been deleted at <time>!" (FullName, no "The")."""
    args.require_args(inv.parsed, 1)
    client = init_client(inv, workspace_path(inv.parsed.args[0]))
    ws = resolve_workspace(client, inv.parsed.args[0])
    full_name = f"{owner_of(client.st, ws)['username']}/{ws['name']}"
    days = (state.now() - ws["last_used_at"]) / 86400
    inv.stderr.write(f"{full_name} was last used {days:.0f} days ago\n")
    prompts.confirm(inv, "Confirm delete workspace?", default_yes=False)
    wait_for_active_build(inv, ws)
    begin(inv, client, ws["id"], "delete")
    run_build(inv, ws["id"], inv.stdout)
    inv.stdout.write(f"\n{full_name} has been deleted at {stamp()}!\n")
    return 0
