"""Pure translations of the patterns agents pass: globs to POSIX EREs, regex shorthands.

The sandbox filters its file listing with `grep -E` (present in GNU grep and busybox alike),
so glob semantics are ours and the same whether ripgrep or `find` made the listing:

* `*` any run of characters but `/`; `?` one character but `/`; `[abc]`, `[!abc]` classes;
  `{a,b}` alternatives (expanded like a shell would); `\\x` a literal `x`.
* `**` as a whole component matches any number of directories (zero included).
* A pattern without `/` matches a file's name at any depth (`*.go` finds every Go file), as
  in .gitignore; a pattern with `/` (or a leading `/` or `./`) is anchored at the search
  directory.
"""

from __future__ import annotations

from ..errors import ToolError

#: Brace expansion may not multiply a pattern beyond this many alternatives.
MAX_ALTERNATIVES = 256

_ERE_SPECIAL = set(".^$+?()[]{}|\\*")


def _split_braces(body: str) -> list[str] | None:
    """Split `a,b{c,d}` at top-level commas; None when there is no top-level comma."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(body[start:i])
            start = i + 1
        i += 1
    if not parts:
        return None
    parts.append(body[start:])
    return parts


def expand_braces(pattern: str) -> list[str]:
    """Shell-style brace expansion: `*.{ts,tsx}` -> `*.ts`, `*.tsx`. Unbalanced braces are
    literal characters."""
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth = 0
            for j in range(i, len(pattern)):
                if pattern[j] == "\\":
                    continue
                if pattern[j] == "{":
                    depth += 1
                elif pattern[j] == "}":
                    depth -= 1
                    if depth == 0:
                        options = _split_braces(pattern[i + 1 : j])
                        if options is None:
                            break  # `{x}` without a comma is literal
                        head, tail = pattern[:i], pattern[j + 1 :]
                        out: list[str] = []
                        for option in options:
                            for rest in expand_braces(option + tail):
                                out.append(head + rest)
                                if len(out) > MAX_ALTERNATIVES:
                                    raise ToolError(
                                        f"glob {pattern!r} expands to more than "
                                        f"{MAX_ALTERNATIVES} alternatives; simplify its braces"
                                    )
                        return out
        i += 1
    return [pattern]


def _component(comp: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(comp):
        ch = comp[i]
        if ch == "*":
            while i + 1 < len(comp) and comp[i + 1] == "*":
                i += 1
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            j = i + 1
            if comp[j : j + 1] in ("!", "^"):
                j += 1
            if comp[j : j + 1] == "]":
                j += 1  # a `]` first in the class is a member, not its end
            end = comp.find("]", j)
            if end < 0:
                out.append("\\[")
            else:
                body = comp[i + 1 : end]
                negate = body[:1] in ("!", "^")
                if negate:
                    body = body[1:]
                if "\\" in body:
                    raise ToolError(
                        f"glob class [{comp[i + 1 : end]}] holds a backslash, which globs "
                        "here do not support inside [...]; list the characters plainly"
                    )
                out.append("[^/" + body + "]" if negate else "[" + body + "]")
                i = end
        elif ch == "\\" and i + 1 < len(comp):
            i += 1
            nxt = comp[i]
            out.append("\\" + nxt if nxt in _ERE_SPECIAL else nxt)
        elif ch in _ERE_SPECIAL:
            out.append("\\" + ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def _one(pattern: str) -> str:
    anchored = pattern.startswith(("/", "./"))
    while pattern.startswith("./"):
        pattern = pattern[2:]
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    if not pattern:
        pattern = "**"
    prefix = "" if anchored or "/" in pattern else "(.*/)?"
    comps = pattern.split("/")
    out = [prefix]
    for index, comp in enumerate(comps):
        last = index == len(comps) - 1
        if comp == "**":
            out.append(".*" if last else "(.*/)?")
        elif comp in ("", "."):
            continue
        else:
            out.append(_component(comp) + ("" if last else "/"))
    return "".join(out)


def glob_to_ere(pattern: str) -> str:
    """A POSIX ERE, anchored at both ends, matching the relative paths `pattern` selects."""
    if not isinstance(pattern, str) or not pattern.strip():
        raise ToolError("glob pattern is empty; pass e.g. \"**/*.go\" or \"*.ts\"")
    if any(ord(c) < 32 for c in pattern):
        raise ToolError(f"glob pattern {pattern!r} holds a control character; remove it")
    alternatives = [_one(p) for p in expand_braces(pattern.strip())]
    unique = list(dict.fromkeys(alternatives))
    return "^(" + "|".join(unique) + ")$"


def pcre_to_ere(pattern: str) -> str:
    """Rewrite the regex shorthands POSIX ERE lacks (`\\d`, `\\D`) outside brackets.

    GNU grep and glibc already accept `\\w`, `\\s`, `\\b`; `\\d` is the one agents use most
    that neither does.
    """
    out: list[str] = []
    i = 0
    in_class = False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            nxt = pattern[i + 1]
            if not in_class and nxt == "d":
                out.append("[0-9]")
            elif not in_class and nxt == "D":
                out.append("[^0-9]")
            else:
                out.append(ch + nxt)
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            # A `]` right after `[` or `[^` is a literal member, not the end.
            if pattern[i + 1 : i + 2] == "^":
                out.append("^")
                i += 1
            if pattern[i + 1 : i + 2] == "]":
                out.append("]")
                i += 1
        elif ch == "]" and in_class:
            in_class = False
            out.append(ch)
        else:
            out.append(ch)
        i += 1
    return "".join(out)
