"""The fake `coder` command: whoami, list, create, start, stop, delete, ssh, version.

One module per subcommand, named after the file of coder's cli/ package it follows (whoami.py
for cli/whoami.go, ...; root.py and cliui.py for what cli/root.go and cli/cliui share), for the
order of checks, the text printed and the errors returned; errors are rendered by ../errors.py
the way cli/root.go does. This dispatcher holds each subcommand's flags and imports only the
module of the one that runs. Only the standard library is imported (the launcher measures every
millisecond); `ssh --stdio` pipes bytes to the agent's unix socket without parsing SSH.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from pathlib import Path

from .. import args, builds, state
from ..args import ARRAY, BOOL, Option
from ..errors import CLIError, ExitCode
from ..session import Invocation, binary_path
from .ssh import normalize_target as normalize_target  # tests import it from here

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

class Command:
    """A subcommand: its options, usage line and aliases; its handler is `cmd_<name>` in the
    module of the same name, imported when it runs."""

    def __init__(
        self,
        name: str,
        options: tuple[Option, ...],
        usage: str,
        aliases: tuple[str, ...] = (),
    ) -> None:
        self.name = name
        self.options = options
        self.usage = usage
        self.aliases = aliases

    @property
    def handler(self) -> Callable[[Invocation], int]:
        module = importlib.import_module(f"{__name__}.{self.name}")
        handler: Callable[[Invocation], int] = getattr(module, f"cmd_{self.name}")
        return handler


def _finish_pending(inv: Invocation) -> None:
    """Let the fake server finish builds that completed since the last call."""
    try:
        st = state.load(inv.root)
    except state.StateMissingError:
        return
    if builds.due(st):
        with state.locked(inv.root) as locked_state:
            builds.finalize_due(inv.root, locked_state)


_PARAMETER_OPTIONS = (
    Option("parameter", ARRAY, env="CODER_RICH_PARAMETER"),
    Option("rich-parameter-file", env="CODER_RICH_PARAMETER_FILE"),
    Option("parameter-default", ARRAY, env="CODER_RICH_PARAMETER_DEFAULT"),
    Option("use-parameter-defaults", BOOL, env="CODER_WORKSPACE_USE_PARAMETER_DEFAULTS"),
)
_YES = Option("yes", BOOL, short="y")

COMMANDS: dict[str, Command] = {
    "whoami": Command("whoami", (Option("output", short="o"),), "whoami"),
    "list": Command(
        "list",
        (
            Option("all", BOOL, short="a"),
            Option("search", default="owner:me"),
            Option("column", ARRAY, short="c"),
            Option("output", short="o"),
        ),
        "list",
        aliases=("ls",),
    ),
    "create": Command(
        "create",
        (
            Option("template", short="t", env="CODER_TEMPLATE_NAME"),
            Option("template-version", env="CODER_TEMPLATE_VERSION"),
            Option("preset", env="CODER_PRESET_NAME"),
            Option("start-at", env="CODER_WORKSPACE_START_AT"),
            Option("stop-after", env="CODER_WORKSPACE_STOP_AFTER"),
            Option("automatic-updates", env="CODER_WORKSPACE_AUTOMATIC_UPDATES", default="never"),
            Option("copy-parameters-from", env="CODER_WORKSPACE_COPY_PARAMETERS_FROM"),
            Option("no-wait", BOOL),
            Option("org", short="O", env="CODER_ORGANIZATION"),
            _YES,
            *_PARAMETER_OPTIONS,
        ),
        "create [workspace]",
    ),
    "start": Command(
        "start",
        (Option("no-wait", BOOL), Option("template-version"), _YES, *_PARAMETER_OPTIONS),
        "start <workspace>",
    ),
    "stop": Command("stop", (_YES,), "stop <workspace>"),
    "delete": Command(
        "delete", (Option("orphan", BOOL), _YES), "delete <workspace>", aliases=("rm",)
    ),
    "ssh": Command(
        "ssh",
        (
            Option("stdio", BOOL, env="CODER_SSH_STDIO"),
            Option("ssh-host-prefix", env="CODER_SSH_SSH_HOST_PREFIX"),
            Option("hostname-suffix", env="CODER_SSH_HOSTNAME_SUFFIX"),
            Option("forward-agent", BOOL, short="A", env="CODER_SSH_FORWARD_AGENT"),
            Option("forward-gpg", BOOL, short="G", env="CODER_SSH_FORWARD_GPG"),
            Option("identity-agent", env="CODER_SSH_IDENTITY_AGENT"),
            Option("workspace-poll-interval", env="CODER_WORKSPACE_POLL_INTERVAL"),
            Option("wait", env="CODER_SSH_WAIT", default="auto"),
            Option("no-wait", BOOL, env="CODER_SSH_NO_WAIT"),
            Option("log-dir", short="l", env="CODER_SSH_LOG_DIR"),
            Option("remote-forward", ARRAY, short="R", env="CODER_SSH_REMOTE_FORWARD"),
            Option("env", ARRAY, short="e", env="CODER_SSH_ENV"),
            Option("disable-autostart", BOOL, env="CODER_SSH_DISABLE_AUTOSTART"),
            Option("tty", BOOL, short="t"),
            Option("network-info-dir"),
            Option("network-info-interval"),
        ),
        "ssh <workspace> [command]",
    ),
    "version": Command("version", (Option("output", short="o"),), "version"),
}
_ALIASES = {alias: cmd.name for cmd in COMMANDS.values() for alias in cmd.aliases}

_GLOBAL_VALUE_FLAGS = {f"--{o.long}" for o in args.GLOBAL_OPTIONS if o.kind != BOOL} | {
    f"-{o.short}" for o in args.GLOBAL_OPTIONS if o.short and o.kind != BOOL
}


def _split_command(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """Find the subcommand; global flags may come before it (config-ssh writes them there)."""
    rest: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token.startswith("-"):
            rest.append(token)
            if token in _GLOBAL_VALUE_FLAGS and i + 1 < len(argv):
                rest.append(argv[i + 1])
                i += 1
            i += 1
            continue
        return token, rest + list(argv[i + 1 :])
    return None, rest


def _release_options(root: Path, command: Command) -> tuple[Option, ...]:
    """The command's flags in the emulated release: v2.27.0 has no --use-parameter-defaults."""
    try:
        settings = state.load(root)["settings"]
    except state.StateMissingError:
        settings = {}
    if settings.get("use_parameter_defaults"):
        return command.options
    return tuple(o for o in command.options if o.long != "use-parameter-defaults")


def _usage() -> str:
    lines = ["Usage: coder [global-flags] <subcommand>", "", "Commands (fake, sandlot.testing):"]
    lines += [f"  {cmd.usage}" for cmd in COMMANDS.values()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ)
    home = env.get(state.HOME_ENV)
    if not home:
        sys.stderr.write(f"fake coder: {state.HOME_ENV} is not set\n")
        return 2
    name, rest = _split_command(argv)
    if name is None:
        sys.stdout.write(_usage())
        return 0
    command = COMMANDS.get(_ALIASES.get(name, name))
    if command is None:
        sys.stderr.write(
            f'Encountered an error running "coder", see "coder --help" for more information\n'
            f'error: unrecognized subcommand "{name}"\n'
        )
        return 1
    inv = Invocation(root=Path(home), command=command.name, parsed=args.Parsed(), env=env)
    inv.binary = binary_path()
    try:
        inv.parsed = args.parse(rest, _release_options(inv.root, command), env)
    except CLIError as exc:
        # serpent reports a flag error bare, with the whole argv, and without the
        # "Encountered an error" head (tests/fixtures/coder-cli/create-unknown-flag.json).
        sys.stderr.write(
            f'parsing flags ([{" ".join(argv)}]) for "coder {command.name}": {exc.message}\n'
        )
        return 1
    try:
        if inv.parsed.flag("help"):
            inv.stdout.write(f"Usage: coder {command.usage}\n")
            return 0
        _finish_pending(inv)
        return command.handler(inv)
    except ExitCode as exc:
        return exc.code
    except CLIError as exc:
        inv.stdout.flush()
        if not exc.silent:
            sys.stderr.write(exc.render(command.name) + "\n")
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(BrokenPipeError, ValueError):
                stream.flush()
