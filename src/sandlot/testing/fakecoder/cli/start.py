"""coder start (cli/start.go)."""

from __future__ import annotations

from .. import args, model, state
from ..session import Invocation, init_client
from .cliui import run_build, stamp
from .root import begin, resolve_workspace, workspace_path


def cmd_start(inv: Invocation) -> int:
    """cli/start.go: already running / already starting / (clean up a failed start) and start."""
    args.require_args(inv.parsed, 1)
    client = init_client(inv, workspace_path(inv.parsed.args[0]))
    ws = resolve_workspace(client, inv.parsed.args[0])
    status = model.workspace_status(ws["build"], state.now())
    if status == "running":
        inv.stdout.write(f"\nThe {ws['name']} workspace is already running!\n")
        return 0
    if status in ("starting", "pending"):
        inv.stdout.write(f"\nThe {ws['name']} workspace is already starting.\n")
        run_build(inv, ws["id"], inv.stdout)
    else:
        if status == "failed" and ws["build"]["transition"] == "start":
            inv.stdout.write("The last start build failed. Cleaning up before retrying...\n")
            begin(inv, client, ws["id"], "stop")
            run_build(inv, ws["id"], inv.stdout, prefix="wait for cleanup stop")
        begin(inv, client, ws["id"], "start")
        run_build(inv, ws["id"], inv.stdout)
    inv.stdout.write(f"\nThe {ws['name']} workspace has been started at {stamp()}!\n")
    return 0
