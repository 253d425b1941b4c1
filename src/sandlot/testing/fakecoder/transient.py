"""Transient API failures: what the CLI prints while coderd is rate limiting, behind a failing
proxy, or restarting. The knob ``api_transient`` (global scope) maps a command name to
``{"remaining": N, "kind": ...}``; the next N runs of that command fail at their first request.

The texts follow the real sources: coderd/httpmw/ratelimit.go answers 429 with a JSON message;
codersdk.ReadBodyAsError turns a non-JSON answer (a proxy's 502/503 page) into
``unexpected non-JSON response "<content type>"`` with the body as detail; cli/root.go prints
an API error's message (and detail) without the status code unless --verbose; Go's dialer says
``connect: connection refused`` while nothing listens.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from . import faults, state
from .errors import CLIError, api_error

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .session import Invocation

KNOB = "api_transient"
KINDS = ("rate_limited", "bad_gateway", "unavailable", "refused")
RATE_LIMITED = "You've been rate limited for sending too many requests!"


def error_for(kind: str, url: str, api_path: str) -> CLIError:
    target = url.strip().rstrip("/") + api_path
    if kind == "rate_limited":
        return api_error(RATE_LIMITED)
    if kind in ("bad_gateway", "unavailable"):
        status = "502 Bad Gateway" if kind == "bad_gateway" else "503 Service Unavailable"
        return api_error(
            'unexpected non-JSON response "text/html"',
            detail=f"<html><head><title>{status}</title></head><body><center><h1>{status}"
            "</h1></center></body></html>",
        )
    parts = urlsplit(url.strip())
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return CLIError(
        f'Get "{target}": dial tcp {parts.hostname}:{port}: connect: connection refused'
    )


def maybe_fail(inv: Invocation, st: state.State, url: str, api_path: str) -> None:
    """Raise the configured transient error if this command has one pending."""
    if KNOB not in st.get("faults", {}).get(faults.GLOBAL, {}):
        return
    with state.locked(inv.root) as locked:
        entry = faults.take_entry(locked, faults.GLOBAL, KNOB, inv.command)
    if entry is not None:
        raise error_for(entry["kind"], url, api_path)
