"""What a package.json script really runs: the commands behind `npm run` references, and the
test runner behind wrappers.

`"test": "npm run test:unit && npm run test:types"` runs two scripts; `c8 --100 node --test`,
`nyc mocha`, `cross-env TZ=UTC jest` and `tsx --test` run a runner under a wrapper. `expand`
follows `npm run` / `pnpm run` / `yarn` / `bun run` references (with npm's pre and post
scripts) into a flat list of commands, each with the operator that joins it to the one before,
so they can be run one by one with the shell's own rules: after `&&` only when the last command
that ran succeeded, after `;` always. `runner_of` strips environment assignments and wrappers
to find which runner a command starts.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass

#: Programs that run another program given later on their command line.
WRAPPERS = frozenset({"cross-env", "cross-env-shell", "c8", "nyc", "npx", "dotenv", "env"})
#: Test runners (and the programs that may start node's runner).
_RUNNERS = {"jest": "jest", "vitest": "vitest", "mocha": "mocha", "_mocha": "mocha"}
_NODES = frozenset({"node", "tsx"})
_MANAGERS = frozenset({"npm", "pnpm", "yarn", "bun"})
_KNOWN = frozenset(_RUNNERS) | _NODES | _MANAGERS
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_MAX_DEPTH = 8


@dataclass(frozen=True)
class Step:
    """One command a script runs: from `script`, joined to the step before by `after`."""

    script: str
    command: str
    after: str  # "" (the first), "&&" or ";"
    runner: str  # jest, vitest, mocha, node-test, or "" (not a test runner)


def expand(scripts: dict[str, str], name: str) -> list[Step] | None:
    """The commands `<pm> run name` runs, in order; None when the script (or one it runs)
    uses shell syntax beyond `&&` and `;`, or the references loop."""
    return _expand(scripts, name, (), "")


def _expand(scripts: dict[str, str], name: str, seen: tuple[str, ...],
            after: str) -> list[Step] | None:
    if name in seen or len(seen) > _MAX_DEPTH or name not in scripts:
        return None
    steps: list[Step] = []
    # npm runs pre<name> first and post<name> last, each only when the one before succeeded.
    for part in (f"pre{name}", name, f"post{name}"):
        if part not in scripts:
            continue
        joined = after if not steps else "&&"
        expanded = _expand_command(scripts, part, scripts[part], (*seen, name), joined)
        if expanded is None:
            return None
        steps += expanded
    return steps


def _expand_command(scripts: dict[str, str], name: str, command: str, seen: tuple[str, ...],
                    after: str) -> list[Step] | None:
    segments = split_list(command)
    if segments is None:
        return None
    steps: list[Step] = []
    for index, (text, joined_by) in enumerate(segments):
        try:
            words = shlex.split(text)
        except ValueError:
            return None
        if not words:
            continue
        joiner = after if index == 0 else joined_by
        start = _wrapper_prefix(words)
        target = _reference(words[start:], scripts)
        if target is not None:
            inner = _expand(scripts, target, seen, joiner)
            if inner is None:
                return None
            # `nyc npm run test-spec`: the wrapper wraps each command of the script it runs.
            prefix = shlex.join(words[:start])
            steps += [
                Step(s.script, f"{prefix} {s.command}", s.after, s.runner) if prefix else s
                for s in inner
            ]
        else:
            # The text as written (globs and quoting intact): the shell runs it as npm would.
            steps.append(Step(name, text.strip(), joiner, runner_of_words(words)))
    return steps


def split_list(command: str) -> list[tuple[str, str]] | None:
    """`a && b; c` -> [("a ", ""), (" b", "&&"), (" c", ";")]: the commands of a shell list and
    the operator before each. None when it holds other control syntax (`||`, pipes, `&`,
    subshells, command substitution, redirections): it cannot be run command by command."""
    segments: list[tuple[str, str]] = []
    start, joined_by = 0, ""
    quote = ""
    i = 0
    while i < len(command):
        char = command[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 2
                continue
            if char == quote:
                quote = ""
        elif char == "\\":
            i += 2
            continue
        elif char in "'\"":
            quote = char
        elif command.startswith("&&", i):
            segments.append((command[start:i], joined_by))
            start, joined_by = i + 2, "&&"
            i += 2
            continue
        elif char == ";":
            segments.append((command[start:i], joined_by))
            start, joined_by = i + 1, ";"
        elif char in "|&()<>`" or command.startswith("$(", i):
            return None
        i += 1
    if quote:
        return None
    segments.append((command[start:], joined_by))
    return segments


def _reference(words: list[str], scripts: dict[str, str]) -> str | None:
    """The script a command runs through the package manager (`npm run x`, `yarn x`, `npm
    test`), when it is exactly that (no extra arguments); else None."""
    if not words or words[0] not in _MANAGERS:
        return None
    rest = words[1:]
    if rest[:1] in (["run"], ["run-script"]):
        rest = rest[1:]
    elif rest[:1] in (["test"], ["t"]):
        rest = ["test"]
    elif words[0] in ("npm", "bun") or not rest or rest[0] not in scripts:
        return None  # npm and bun need `run` for a script; pnpm and yarn accept its name
    if len(rest) != 1 or rest[0] not in scripts:
        return None
    return rest[0]


def _wrapper_prefix(words: list[str]) -> int:
    """Where the wrapped program starts: past environment assignments and wrappers with their
    options and values (`cross-env A=1 nyc --silent` of `cross-env A=1 nyc --silent mocha`)."""
    i = 0
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1  # VAR=value before the command
    while i < len(words):
        program = posixpath.basename(words[i])
        if program in _KNOWN:
            break  # a runner or a package manager is never a wrapper's option value
        if program not in WRAPPERS and not (i > 0 and _wrapped(words, i)):
            break
        i += 1  # a wrapper, or an option / value / assignment of the wrapper before
    return i


def runner_of(command: str) -> str:
    """The test runner a shell command starts: jest, vitest, mocha, node-test or ''."""
    try:
        return runner_of_words(shlex.split(command))
    except ValueError:
        return ""


def runner_of_words(words: list[str]) -> str:
    i = _wrapper_prefix(words)
    if i == len(words):
        return ""
    program = posixpath.basename(words[i])
    if program in _NODES:
        return "node-test" if "--test" in words[i + 1:] else ""
    return _RUNNERS.get(program, "")


def _wrapped(words: list[str], i: int) -> bool:
    """Whether words[i] belongs to a wrapper before it (its option, value or VAR=value)."""
    word = words[i]
    return word.startswith("-") or bool(_ASSIGNMENT.match(word)) or _is_value(words, i)


def _is_value(words: list[str], i: int) -> bool:
    # `--reporter text`: the value of the option before it (a word that is no program we know).
    return words[i - 1].startswith("-") and "=" not in words[i - 1]
