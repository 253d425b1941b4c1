"""Rich parameters for `coder create`: the order of precedence of cli/parameterresolver.go.

Sources, later ones winning: ``--rich-parameter-file`` (a flat YAML map),
``--parameter name=value``, then the preset's values. Every name must exist in the template
(``parameter "x" is not present in the template.``, with ``Did you mean`` suggestions).
Then every template parameter still without a value is prompted for, even one with a default,
unless ``--use-parameter-defaults`` (releases after v2.27; the fake's `use_parameter_defaults`
setting) is given and a default exists (``Using default value for
<name>: '<value>'``); ``--parameter-default`` replaces the template's default. With stdin at EOF
the prompt fails, so the command fails with ``prepare build: EOF`` (cli/create.go wraps resolver
errors in ``prepare build:``).
"""

from __future__ import annotations

import json
from pathlib import Path

from . import prompts
from .errors import CLIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .session import Invocation


def split_pairs(items: list[str], what: str) -> list[tuple[str, str]]:
    """cli/parameter.go asWorkspaceBuildParameters: `name=value`, split at the first '='."""
    pairs: list[tuple[str, str]] = []
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise CLIError(f"can't parse given {what}: format key=value expected, but got {item}")
        pairs.append((name, value))
    return pairs


def _scalar(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def parse_yaml_map(path: str) -> dict[str, str]:
    """The subset of YAML a parameter file uses: `key: scalar`, `key: [a, b]` or a `- item` list.

    Lists become JSON arrays, as cli/parameter.go parseParameterMapFile does for list(string).
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise CLIError(f"open {path}: {exc.strerror.lower() if exc.strerror else exc}") from exc
    result: dict[str, Any] = {}
    current_list: list[str] | None = None
    for raw in text.splitlines():
        line = raw.split(" #", 1)[0].rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        stripped = line.strip()
        if stripped.startswith("- ") and current_list is not None:
            current_list.append(_scalar(stripped[2:]))
            continue
        key, sep, rest = line.partition(":")
        if not sep or line[0].isspace():
            raise CLIError(f"yaml: line could not be parsed: {raw!r}")
        key = _scalar(key)
        rest = rest.strip()
        if not rest:
            current_list = []
            result[key] = current_list
        elif rest.startswith("[") and rest.endswith("]"):
            inner = rest[1:-1].strip()
            result[key] = [_scalar(part) for part in inner.split(",")] if inner else []
            current_list = None
        else:
            result[key] = _scalar(rest)
            current_list = None
    return {
        key: json.dumps(value, separators=(",", ":")) if isinstance(value, list) else str(value)
        for key, value in result.items()
    }


def _levenshtein(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, 1):
        current = [i]
        for j, char_b in enumerate(b, 1):
            current.append(
                min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            )
        previous = current
    return previous[-1]


def _not_present(name: str, template_params: list[dict[str, Any]]) -> CLIError:
    message = f'parameter "{name}" is not present in the template.'
    limit = len(name) // 2
    matches = [p["name"] for p in template_params if _levenshtein(name, p["name"]) <= limit]
    if matches:
        message += "\nDid you mean: " + ", ".join(matches)
    return CLIError(message)


def resolve_for_create(
    inv: Invocation, template: dict[str, Any], preset_values: dict[str, str]
) -> list[dict[str, str]]:
    """Return the build parameters as [{name, value}], prompting like the real CLI."""
    staged: dict[str, str] = {}
    file_name = inv.parsed.text("rich_parameter_file")
    if file_name:
        try:
            staged.update(parse_yaml_map(file_name))
        except CLIError as exc:
            raise exc.wrap("can't parse parameter map file") from None
    staged.update(split_pairs(inv.parsed.many("parameter"), "parameter values"))
    defaults = dict(split_pairs(inv.parsed.many("parameter_default"), "parameter defaults"))
    staged.update(preset_values)
    template_params: list[dict[str, Any]] = template.get("parameters", [])
    known = {p["name"] for p in template_params}
    for name in staged:
        if name not in known:
            raise _not_present(name, template_params)
    use_defaults = inv.parsed.flag("use_parameter_defaults")
    for param in template_params:
        if param["name"] in staged or param.get("ephemeral"):
            continue
        shown = param.get("display_name") or param["name"]
        default = defaults.get(param["name"], param.get("default", ""))
        if use_defaults and default != "":
            inv.stdout.write(f"Using default value for {shown}: '{default}'\n")
            staged[param["name"]] = default
            continue
        description = param.get("description", "")
        # cliui.RichParameter: the label on its own line, then the prompt; the text is
        # tests/fixtures/coder-cli/create-params-no-values.json.
        inv.stdout.write(f"{shown}\n" + (f"  {description}\n\n" if description else ""))
        text = f'Enter a value (default: "{default}"):' if default else "Enter a value:"
        answer = prompts.value(inv, text, default)
        while not answer and param.get("required"):
            answer = prompts.value(inv, text, default)
        staged[param["name"]] = answer
    order = {p["name"]: i for i, p in enumerate(template_params)}
    return [
        {"name": name, "value": value}
        for name, value in sorted(staged.items(), key=lambda kv: order.get(kv[0], len(order)))
    ]
