"""coder version (cli/version.go)."""

from __future__ import annotations

from .. import shapes
from ..errors import CLIError
from ..session import Invocation


def cmd_version(inv: Invocation) -> int:
    """cli/version.go: text (with the CRLFs the real one prints) or `-o json` (versionInfo)."""
    info = {
        "version": shapes.FAKE_VERSION,
        "build_time": "2026-01-01T00:00:00Z",
        "external_url": "https://github.com/coder/coder",
        "slim": False,
        "agpl": False,
        "boring_crypto": False,
    }
    fmt = inv.parsed.text("output") or "text"
    if fmt == "json":
        inv.stdout.write(shapes.dumps(info) + "\n")
    elif fmt == "text":
        inv.stdout.write(
            f"Coder {info['version']} Thu Jan  1 00:00:00 UTC 2026\r\n{info['external_url']}"
            "\r\n\r\nFull build of Coder, supports the server subcommand.\n"
        )
    else:
        raise CLIError(f'unknown output format "{fmt}"')
    return 0
