"""Fault knobs: named settings in the state file that bend the fake's answers.

Knobs live in ``state["faults"]`` under a scope: ``"*"`` for every workspace, or a workspace name
for that workspace only (the more specific scope wins). Counter knobs (``ssh_shutting_down``,
``create_fails_after_exists``, ``build_failures.<transition>``, ``drop_remaining``) are consumed one
per occurrence from the most specific scope that still has some left.

Knob reference (set them through FakeCoderDeployment, which validates them):

- ``connect_delay_lists`` (int): a newly started agent reports ``connecting`` for this many
  ``coder list`` calls.
- ``connect_delay_seconds`` (float): ... or for this many seconds after its build completes.
- ``agent_status`` (str): force the agent status (connecting | connected | disconnected | timeout).
- ``lifecycle`` (str): force the lifecycle state of a connected agent (e.g. starting, start_error,
  start_timeout, shutting_down, off).
- ``ssh_shutting_down`` (int): the next N ``coder ssh`` attempts fail with
  ``agent is shutting down`` while ``coder list`` still shows the agent connected and ready (the
  prebuild claim race).
- ``create_fails_after_exists`` ({remaining, message}): ``coder create`` creates and builds the
  workspace, then fails anyway (e.g. the build watch loses the server).
- ``build_failures`` ({transition: {remaining, error}}): the next build of that transition fails
  with ``job.status = failed`` and ``job.error``.
- ``drop_marker`` (str) and ``drop_remaining`` (int | None): the agent drops the whole SSH
  connection shortly after starting a command that contains the marker (None = every time).
"""

from __future__ import annotations

from . import state

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GLOBAL = "*"


def effective(st: state.State, workspace: str) -> dict[str, Any]:
    """The knobs in force for one workspace (workspace scope over global scope)."""
    table: dict[str, dict[str, Any]] = st.get("faults", {})
    merged = dict(table.get(GLOBAL, {}))
    merged.update(table.get(workspace, {}))
    return merged


def take(st: state.State, workspace: str, key: str) -> bool:
    """Consume one unit of a counter knob; True when the fault fires now."""
    table: dict[str, dict[str, Any]] = st.setdefault("faults", {})
    for scope in (workspace, GLOBAL):
        knobs = table.get(scope, {})
        remaining = knobs.get(key, 0)
        if remaining and remaining > 0:
            knobs[key] = remaining - 1
            return True
    return False


def take_entry(st: state.State, workspace: str, key: str, sub: str | None = None) -> Any:
    """Consume one use of a structured knob ({remaining, ...}); return its payload or None."""
    table: dict[str, dict[str, Any]] = st.setdefault("faults", {})
    for scope in (workspace, GLOBAL):
        entry = table.get(scope, {}).get(key)
        if entry is not None and sub is not None:
            entry = entry.get(sub)
        if entry and entry.get("remaining", 0) > 0:
            entry["remaining"] -= 1
            return entry
    return None


def set_knob(st: state.State, scope: str, key: str, value: Any) -> None:
    table: dict[str, dict[str, Any]] = st.setdefault("faults", {})
    knobs = table.setdefault(scope, {})
    if value is None:
        knobs.pop(key, None)
    else:
        knobs[key] = value
