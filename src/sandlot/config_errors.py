"""Provider configuration errors in words a user can act on, without the values they gave.

pydantic's own rendering of a failed union quotes the input (`input_value={...}`, cut in the
middle, so a session token's tail survives the masking of the whole token) and names internal
union titles (`tagged-union[LocalOptions,function-after[...]]`). Here each error becomes one line
that names the provider, the field and the fix, built only from the error's location, type and
the schema's own expectations -- never from the input.

This is the ONE renderer of validation errors: the provider factories (`sandlot.local`,
`sandlot.docker`, `sandlot.coder`, through `sandlot._options`), `parse_config` (the CLI, serve,
mcp, `$SANDLOT_PROVIDER`), serve's settings, the HTTP server's request errors and the toolbox's
arguments all go through `describe`. Validators write messages that name the field and the fix,
never the value (a value can be a secret: an env value, a token, a URL with credentials);
`_scrub` masks any input string a message would still repeat, so one careless validator cannot
leak what the rule forbids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from .errors import ConfigurationError

PROVIDER_TYPES = ("local", "docker", "coder")

#: What `on_close` accepts per provider, for the "is required" hint.
_ON_CLOSE = {"local": "delete or leave", "docker": "delete, stop or leave",
             "coder": "delete, stop or leave"}  # fmt: skip

#: Location parts pydantic adds for nested unions (coder's create/attach modes).
_INTERNAL_PARTS = {"create", "attach"}

#: A provider type the user typed is echoed only if it looks like a type name, not a secret.
_ECHOABLE_TAG = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,19}")

_WORD = re.compile(r"[a-z]+")


def describe(exc: ValidationError | Iterable[Mapping[str, Any]]) -> str:
    """One line per error; the values the user gave never appear.

    Takes a pydantic `ValidationError` or the error dicts of one (FastAPI's
    `RequestValidationError.errors()`)."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else exc
    lines = [_scrub(_describe_one(error), error.get("input")) for error in errors]
    return "; ".join(dict.fromkeys(lines))  # the same message twice says nothing new


def invalid(what: str, exc: ValidationError) -> ConfigurationError:
    """The typed error for a failed validation of `what` ("docker options", ...)."""
    return ConfigurationError(f"invalid {what}: {describe(exc)}")


def _scrub(line: str, value: Any) -> str:
    """`line` with every string of the input (keys excepted: they are names) masked."""
    for text in sorted(_strings(value), key=len, reverse=True):
        line = line.replace(text, "***")
        line = line.replace(repr(text)[1:-1], "***")  # as a validator's {value!r} escapes it
    return line


def _strings(value: Any, depth: int = 0) -> set[str]:
    # Short strings and plain lowercase words ("delete", "docker") are left alone: masking
    # them would garble the message's own words, and a secret that short protects nothing.
    if depth > 8:
        return set()
    if isinstance(value, str):
        return {value} if len(value) >= 6 and not _WORD.fullmatch(value) else set()
    if hasattr(value, "get_secret_value"):
        return _strings(value.get_secret_value(), depth + 1)
    found: set[str] = set()
    if isinstance(value, Mapping):
        for item in value.values():
            found |= _strings(item, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for item in value:
            found |= _strings(item, depth + 1)
    elif hasattr(value, "__dict__") and not isinstance(value, type):
        for item in vars(value).values():
            found |= _strings(item, depth + 1)
    return found


def _describe_one(error: Mapping[str, Any]) -> str:
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
    if kind in ("model_type", "dict_type") and not field and not provider:
        return 'it must be a JSON object, e.g. {"type": "local"}'
    if not provider:
        # Not a provider configuration (a factory's keywords, serve's settings, a tool's
        # arguments): the field and pydantic's own words, which never embed the input.
        message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
        return f"{field}: {message}" if field else message
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
    if re.fullmatch(r"[A-Za-z0-9_]{1,40}", part):
        return part
    return repr(part[:40])
