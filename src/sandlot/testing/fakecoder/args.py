"""Command-line parsing with the semantics of coder's serpent/pflag parser.

Flags may come before or after positional arguments; ``--flag=value``, ``--flag value``,
``-f value``, ``-fvalue`` and bundled boolean shorthands (``-ay``) are accepted; ``--`` ends the
flags; each option may also come from its environment variable (serpent ``Option.Env``), the
flag winning over the environment. Parse errors use pflag's wording.
"""

from __future__ import annotations

from .errors import CLIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

BOOL = "bool"
STRING = "string"
ARRAY = "string-array"


class Option:
    """One flag; `dest` is the long name with dashes turned into underscores."""

    __slots__ = ("default", "dest", "env", "kind", "long", "short")

    def __init__(
        self,
        long: str,
        kind: str = STRING,
        short: str = "",
        env: str = "",
        default: str | bool | None = None,
    ) -> None:
        self.long = long
        self.kind = kind
        self.short = short
        self.env = env
        self.default = default
        self.dest = long.replace("-", "_")


# cli/root.go: the global options every command accepts.
GLOBAL_OPTIONS: tuple[Option, ...] = (
    Option("url", env="CODER_URL"),
    Option("token", env="CODER_SESSION_TOKEN"),
    Option("global-config", env="CODER_CONFIG_DIR"),
    Option("header", ARRAY, env="CODER_HEADER"),
    Option("header-command", env="CODER_HEADER_COMMAND"),
    Option("no-version-warning", BOOL, env="CODER_NO_VERSION_WARNING"),
    Option("no-feature-warning", BOOL, env="CODER_NO_FEATURE_WARNING"),
    Option("force-tty", BOOL, env="CODER_FORCE_TTY"),
    Option("verbose", BOOL, short="v", env="CODER_VERBOSE"),
    Option("disable-direct-connections", BOOL, env="CODER_DISABLE_DIRECT_CONNECTIONS"),
    Option("disable-network-telemetry", BOOL, env="CODER_DISABLE_NETWORK_TELEMETRY"),
    Option("use-keyring", BOOL, env="CODER_USE_KEYRING"),
    Option("debug-http", BOOL),
    Option("help", BOOL, short="h"),
)


class Parsed:
    """Option values by dest, positional arguments, and which options were given as flags."""

    def __init__(self) -> None:
        self.values: dict[str, str | bool | list[str] | None] = {}
        self.args: list[str] = []
        self.given: set[str] = set()

    def text(self, dest: str) -> str:
        value = self.values.get(dest)
        return value if isinstance(value, str) else ""

    def flag(self, dest: str) -> bool:
        return self.values.get(dest) is True

    def many(self, dest: str) -> list[str]:
        value = self.values.get(dest)
        return list(value) if isinstance(value, list) else []


def _truthy(text: str, name: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("1", "t", "true", "yes", "y"):
        return True
    if lowered in ("0", "f", "false", "no", "n", ""):
        return False
    raise CLIError(
        f'invalid argument "{text}" for "--{name}" flag: strconv.ParseBool: parsing '
        f'"{text}": invalid syntax'
    )


def parse(argv: Sequence[str], options: Sequence[Option], env: Mapping[str, str]) -> Parsed:
    """Parse `argv` (without the subcommand name) against command + global options."""
    all_options = [*options, *GLOBAL_OPTIONS]
    by_long = {o.long: o for o in all_options}
    by_short = {o.short: o for o in all_options if o.short}
    out = Parsed()

    def assign(opt: Option, value: str | bool) -> None:
        out.given.add(opt.dest)
        if opt.kind == ARRAY:
            current = out.values.setdefault(opt.dest, [])
            assert isinstance(current, list)
            current.append(str(value))
        elif opt.kind == BOOL:
            out.values[opt.dest] = value if isinstance(value, bool) else _truthy(value, opt.long)
        else:
            out.values[opt.dest] = str(value)

    i = 0
    items = list(argv)
    while i < len(items):
        token = items[i]
        i += 1
        if token == "--":
            out.args.extend(items[i:])
            break
        if token.startswith("--") and len(token) > 2:
            name, eq, inline = token[2:].partition("=")
            opt = by_long.get(name)
            if opt is None:
                raise CLIError(f"unknown flag: --{name}")
            if opt.kind == BOOL:
                assign(opt, inline if eq else True)
            elif eq:
                assign(opt, inline)
            elif i < len(items):
                assign(opt, items[i])
                i += 1
            else:
                raise CLIError(f"flag needs an argument: --{name}")
            continue
        if token.startswith("-") and len(token) > 1:
            j = 1
            while j < len(token):
                char = token[j]
                opt = by_short.get(char)
                if opt is None:
                    raise CLIError(f"unknown shorthand flag: '{char}' in {token}")
                rest = token[j + 1 :]
                if opt.kind == BOOL:
                    if rest.startswith("="):
                        assign(opt, rest[1:])
                        break
                    assign(opt, True)
                    j += 1
                    continue
                if rest:
                    assign(opt, rest[1:] if rest.startswith("=") else rest)
                elif i < len(items):
                    assign(opt, items[i])
                    i += 1
                else:
                    raise CLIError(f"flag needs an argument: '{char}' in {token}")
                break
            continue
        out.args.append(token)

    for opt in all_options:
        if opt.dest in out.given:
            continue
        raw = env.get(opt.env) if opt.env else None
        if raw is not None and raw != "":
            if opt.kind == ARRAY:
                out.values[opt.dest] = [part for part in raw.split(",") if part]
            elif opt.kind == BOOL:
                out.values[opt.dest] = _truthy(raw, opt.long)
            else:
                out.values[opt.dest] = raw
        elif opt.default is not None:
            out.values[opt.dest] = opt.default
    return out


def require_args(parsed: Parsed, count: int) -> None:
    """serpent.RequireNArgs: `wanted N args but got M [a b]`."""
    if len(parsed.args) != count:
        shown = " ".join(parsed.args)
        raise CLIError(f"wanted {count} args but got {len(parsed.args)} [{shown}]")
