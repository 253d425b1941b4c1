"""Provider configuration errors in words a user can act on, without the values they gave.

pydantic's own rendering of a failed union quotes the input (`input_value={...}`, cut in the
middle, so a session token's tail survives the masking of the whole token) and names internal
union titles (`tagged-union[LocalOptions,function-after[...]]`). Here each error becomes one line
that names the provider, the field and the fix, built only from the error's location, type and
the schema's own expectations -- never from the input.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

PROVIDER_TYPES = ("local", "docker", "coder")

#: What `on_close` accepts per provider, for the "is required" hint.
_ON_CLOSE = {"local": "delete or leave", "docker": "delete, stop or leave",
             "coder": "delete, stop or leave"}  # fmt: skip

#: Location parts pydantic adds for nested unions (coder's create/attach modes).
_INTERNAL_PARTS = {"create", "attach"}

#: A provider type the user typed is echoed only if it looks like a type name, not a secret.
_ECHOABLE_TAG = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,19}")


def describe(exc: ValidationError) -> str:
    """One line per error; the values the user gave never appear."""
    lines = [_describe_one(error) for error in exc.errors(include_url=False, include_input=False)]
    return "; ".join(dict.fromkeys(lines))  # the same message twice says nothing new


def _describe_one(error: Any) -> str:
    kind: str = error["type"]
    ctx: dict[str, Any] = error.get("ctx") or {}
    provider, field = _split(error["loc"])
    where = f"{provider}: " if provider else ""
    if kind == "union_tag_not_found":
        return '"type" is required: one of local, docker or coder'
    if kind == "union_tag_invalid":
        tag = str(ctx.get("tag", ""))
        shown = f' "{tag}"' if _ECHOABLE_TAG.fullmatch(tag) else ""
        return f"unknown provider type{shown}; expected local, docker or coder"
    if kind == "json_invalid":
        # The parser's position ("... at line 1 column 7"), never the text around it.
        position = re.search(r"line \d+ column \d+", str(ctx.get("error", "")))
        at = f" (at {position.group(0)})" if position else ""
        return f"not valid JSON{at}; check quotes and commas"
    if kind in ("model_type", "dict_type") and not field:
        return 'it must be a JSON object, e.g. {"type": "local"}'
    if kind == "missing":
        hint = f" ({_ON_CLOSE[provider]})" if field == "on_close" and provider in _ON_CLOSE else ""
        return f"{where}{field} is required{hint}"
    if kind == "extra_forbidden":
        options = f"the {provider} options" if provider else "the provider options"
        return f"{where}unknown option {field}; see {options} in the README"
    if kind == "literal_error":
        return f"{where}{field} must be {ctx.get('expected', 'one of the documented values')}"
    # Type errors ("Input should be a valid string") and our own validators' messages: pydantic's
    # msg for these never embeds the input; value errors carry "Value error, " in front.
    message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
    return f"{where}{field}: {message}" if field else f"{where}{message}"


def _split(loc: tuple[Any, ...]) -> tuple[str, str]:
    """("coder", "attach", "on_close") -> ("coder", "on_close")."""
    parts = [str(part) for part in loc]
    provider = parts.pop(0) if parts and parts[0] in PROVIDER_TYPES else ""
    kept = [p for p in parts if p not in _INTERNAL_PARTS and not p.startswith("function-")]
    return provider, ".".join(_safe_name(p) for p in kept)


def _safe_name(part: str) -> str:
    # Field names come from the schema; keys of a mapping (env names, extra options) come from
    # the user: show them quoted and short, so a hostile key cannot forge a line of output.
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,39}", part):
        return part
    return repr(part[:40])
