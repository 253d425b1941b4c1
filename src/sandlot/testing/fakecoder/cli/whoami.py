"""coder whoami (cli/whoami.go)."""

from __future__ import annotations

from .. import args, shapes
from ..errors import CLIError
from ..session import Invocation, init_client


def cmd_whoami(inv: Invocation) -> int:
    """cli/whoami.go: `-o json` prints a one-element array, without a trailing newline."""
    args.require_args(inv.parsed, 0)
    client = init_client(inv, "/api/v2/users/me")
    row = shapes.whoami_row(client.st, client.user, client.url)
    fmt = inv.parsed.text("output") or "text"
    if fmt == "json":
        inv.stdout.write(shapes.dumps([row]))
    elif fmt == "table":
        inv.stdout.write("URL                     USERNAME  ID\n")
        inv.stdout.write(f"{row['url']}  {row['username']}  {row['user_id']}\n")
    elif fmt == "text":
        # v2.27.0 renders the text form as a one-element list, no trailing newline
        # (tests/fixtures/coder-cli/whoami-text.json).
        inv.stdout.write(
            f"[  Coder is running at {row['url']}, You're authenticated as {row['username']} !\n]"
        )
    else:
        raise CLIError(f'unknown output format "{fmt}"')
    return 0
