"""coder stop (cli/stop.go)."""

from __future__ import annotations

from .. import args, prompts
from ..session import Invocation, init_client
from .cliui import run_build, stamp
from .root import begin, resolve_workspace, wait_for_active_build, workspace_path


def cmd_stop(inv: Invocation) -> int:
    """cli/stop.go: confirm, then a stop build, then "The <name> workspace has been stopped"."""
    args.require_args(inv.parsed, 1)
    client = init_client(inv, workspace_path(inv.parsed.args[0]))
    prompts.confirm(inv, "Confirm stop workspace?")
    ws = resolve_workspace(client, inv.parsed.args[0])
    wait_for_active_build(inv, ws)
    begin(inv, client, ws["id"], "stop")
    run_build(inv, ws["id"], inv.stdout)
    inv.stdout.write(f"\nThe {ws['name']} workspace has been stopped at {stamp()}!\n")
    return 0
