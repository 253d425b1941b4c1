"""coder list (cli/list.go), with its search filter (cli/cliui/workspacefilter.go)."""

from __future__ import annotations

import re
from pathlib import Path

from .. import args, model, shapes, state
from ..errors import CLIError, api_error
from ..session import Client, Invocation, init_client, query_path
from .cliui import table
from .root import owner_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


_SEARCH_KEYS = frozenset(
    {
        "owner",
        "template",
        "name",
        "status",
        "has-agent",
        "dormant",
        "last_used_after",
        "last_used_before",
        "outdated",
        "organization",
        "id",
        "has-ai-task",
        "has_external_agent",
        "param",
        "shared",
        "healthy",
    }
)


def _search_terms(query: str) -> list[tuple[str, str]]:
    terms: list[tuple[str, str]] = []
    for element in re.findall(r'(?:[^\s"]|"[^"]*")+', query.lower()):
        element = element.replace('"', "")
        key, sep, value = element.partition(":")
        if sep:
            terms.append((key, value))
        elif "/" in element:
            owner, _, name = element.partition("/")
            terms.extend([("owner", owner), ("name", name)])
        else:
            terms.append(("name", element))
    return terms


def _matches(client: Client, ws: dict[str, Any], terms: list[tuple[str, str]], at: float) -> bool:
    st = client.st
    owner = owner_of(st, ws)
    template = next(t for t in st["templates"].values() if t["id"] == ws["template_id"])
    for key, value in terms:
        if key == "owner":
            expected = client.user["username"].lower() if value == "me" else value
            if owner["username"].lower() != expected and owner["id"] != value:
                return False
            continue
        checks: dict[str, Callable[[str], bool]] = {
            "name": lambda v: v in ws["name"].lower(),
            "template": lambda v: template["name"].lower() == v,
            "status": lambda v: model.workspace_status(ws["build"], at) == v,
            "id": lambda v: ws["id"] in v.split(","),
        }
        check = checks.get(key)
        if check is not None and not check(value):
            return False
    return True


def cmd_list(inv: Invocation) -> int:
    """cli/list.go + cli/cliui/workspacefilter.go.

    ``--all`` drops the filter, else ``--search`` (default ``owner:me``) is sent as ``q``.
    With no workspace, `-o json` prints ``[]`` (tests/fixtures/coder-cli/list-empty.json);
    with the `empty_list_json` setting off (older releases) stdout stays empty and stderr says
    ``No workspaces found! Create one:``.
    """
    args.require_args(inv.parsed, 0)
    query = "" if inv.parsed.flag("all") else (inv.parsed.text("search") or "owner:me")
    client = init_client(inv, query_path("/api/v2/workspaces", query), wrap="query workspaces")
    terms = _search_terms(query)
    bad = [key for key, _ in terms if key not in _SEARCH_KEYS]
    if bad:
        error = api_error(
            "Invalid workspace search query.",
            validations=[(key, f'Query param "{key}" is not a valid query param') for key in bad],
        )
        raise error.wrap("query workspaces")
    at = state.now()
    st = client.st
    selected = [ws for ws in state.live_workspaces(st) if _matches(client, ws, terms, at)]
    selected.sort(
        key=lambda ws: (
            model.workspace_status(ws["build"], at) != "running",
            owner_of(st, ws)["username"].lower(),
            ws["name"].lower(),
        )
    )
    rendered = [shapes.workspace(st, ws, at) for ws in selected]
    _count_list_call(inv.root, [ws["id"] for ws in selected])
    fmt = inv.parsed.text("output") or "table"
    if fmt not in ("json", "table"):
        raise CLIError(f'unknown output format "{fmt}"')
    if not rendered:
        if fmt == "json" and st["settings"].get("empty_list_json"):
            inv.stdout.write("[]\n")
            return 0
        inv.stderr.write("No workspaces found! Create one:\n\n  coder create <name>\n\n")
        return 0
    if fmt == "json":
        inv.stdout.write(shapes.dumps(rendered) + "\n")
    else:
        inv.stdout.write(table(rendered))
    return 0


def _count_list_call(root: Path, workspace_ids: list[str]) -> None:
    """Consume one unit of `connect_delay_lists` for the agents this call reported."""
    st = state.load(root)
    if not any(
        rec.get("connect_lists_remaining", 0) > 0
        for wid in workspace_ids
        for rec in st["workspaces"][wid].get("agents", [])
    ):
        return
    with state.locked(root) as locked_state:
        for wid in workspace_ids:
            for rec in locked_state["workspaces"][wid].get("agents", []):
                if rec.get("connect_lists_remaining", 0) > 0:
                    rec["connect_lists_remaining"] -= 1
                    if rec["connect_lists_remaining"] == 0:
                        rec["connect_released_at"] = state.now()
