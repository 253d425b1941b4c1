"""Interactive prompts, non-interactive the way coder's are (cli/cliui/prompt.go).

A prompt writes its text to stdout and reads one line from stdin. At end of input the read
error comes back as is, so the command fails with ``EOF`` (``prepare build: EOF`` for a template
parameter). A confirmation is skipped by ``-y/--yes``; any answer but ``yes``/``y`` cancels, and a
cancelled command exits 1 without printing an error (cliui.ErrCanceled in cli/root.go).
"""

from __future__ import annotations

from .errors import CLIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .session import Invocation


def read_line(inv: Invocation) -> str:
    line = inv.stdin.readline()
    if not line:
        raise CLIError("EOF")
    text: str = line.rstrip("\r\n")
    return text


def confirm(inv: Invocation, text: str, default_yes: bool = True) -> None:
    if inv.parsed.flag("yes"):
        return
    choices = "(yes/no) "
    inv.stdout.write(f"> {text} {choices}")
    inv.stdout.flush()
    answer = read_line(inv) or ("yes" if default_yes else "no")
    if answer not in ("yes", "y"):
        raise CLIError(f'got "{answer}": canceled', silent=True)


def value(inv: Invocation, text: str, default: str = "") -> str:
    """cliui.Prompt: ``> <text> ``; an empty answer takes `default`."""
    inv.stdout.write(f"> {text} ")
    inv.stdout.flush()
    answer = read_line(inv)
    return answer or default
