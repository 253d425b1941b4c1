"""grep served inside the session helper, with no process start: ripgrep's `--json` events,
computed here in Python for the patterns and files where that gives exactly what `rg` gives,
and `rg` itself for everything else (adr/0042, "grep without a process").

Starting rg costs more than the whole call would otherwise (~12 ms against ~5 ms for one
`cat` round trip), so grep was the one file tool above its goal. Exactness is kept by refusing
rather than approximating:

- **Patterns.** `plan()` translates a small subset of rg's (Rust) regex syntax into a Python
  `re` pattern with the same matches: literals, `.`, `^` `$` (line anchors: rg compiles with
  multi_line), simple bracket classes, `(...)` `(?:...)`, `|`, the quantifiers `* + ? {n}
  {n,} {n,m}` (lazy too) on one-character atoms and `?` on groups, escaped metacharacters,
  `\\t`, and `\\d \\w \\s` and their negations. Anything else (`\\b` and `\\B`, lookaround,
  inline flags, named groups, nested or POSIX classes, set operations, any other escape, a
  `{` that is not a counted repetition, a quantified group or a quantifier on nothing...) is
  left to rg, which also judges whether it is valid: a pattern the subset accepts is valid
  for rg by construction, so its check (one rg start per new pattern) is skipped.
- **Dialect differences** handled in the translation: nothing matches the line terminator
  (rg forbids it: `[^x]` and `\\s` never match `\\n`), so the whole file is searched in one
  pass with `re.M` and every match lies on one line; `\\s` is rg's `[\\t\\x0b\\x0c\\r ]` (Python's
  also matches `\\x1c`-`\\x1f`); ignore-case is spelled out as classes because Rust folds by
  Unicode simple case folding (`k` also matches U+212A KELVIN SIGN, `s` U+017F LONG S) while
  Python's IGNORECASE also folds `i` to U+0130/U+0131: a case-insensitive pattern with a
  non-ASCII literal goes to rg. Rust's `\\d \\w \\s` are Unicode classes whose tables need not
  match this Python's: a pattern using them is searched here only in files that are ASCII.
- **Files** go to rg (in one rg run for all of them, their events put back in order) when
  rg's answer depends on what this code does not reproduce: a NUL byte (rg's binary
  handling), a byte-order mark (rg transcodes), invalid UTF-8 (rg prints raw bytes), a match
  that is empty (rg's iteration over empty matches differs from Python's), a file over
  `MAX_FILE` bytes, or more regex work than `BUDGET` allows (Python's backtracking is not
  linear like Rust's: a line of length L costs up to L^(1+k) * 2^q for k unbounded and q
  optional repeats, and the whole call shares one budget, so a hostile file costs rg's time,
  never a stuck helper).

The events are rg's own, field for field and in rg's key order (dumped by json.dumps as the
rg route re-dumps them); only rg's self-accounting differs: `elapsed` is this search's time and
`bytes_printed` the size of the lines this route wrote for the file (rg counts its compact form
under a /dev/fd name; reproducing that cost a second JSON dump of every event). The host reads
neither.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import time
from collections.abc import Callable
from typing import Any

#: Files larger than this are searched by rg.
MAX_FILE = 4 << 20
#: Regex work (see the module's docstring) one grep call may spend here before rg takes over.
BUDGET = 30_000_000
MAX_PATTERN = 512
MAX_COUNT = 100
MAX_OPTIONAL = 10
#: Metacharacters that a backslash makes literal in both dialects.
_META = set("\\.+*?()|[]{}^$")
#: What Rust's case-insensitive matching adds to an ASCII letter (simple case folding).
_FOLD_EXTRA = {"k": "\u212a", "s": "\u017f"}
_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")


class Unsupported(Exception):
    """The pattern is outside the subset translated here: rg searches with it."""


def _class_char(ch: str) -> str:
    return "\\" + ch if ch in "\\]^-[" else ("\\t" if ch == "\t" else ch)


def _literal(ch: str, icase: bool) -> str:
    if icase and ch.isascii() and ch.isalpha():
        low = ch.lower()
        return "[" + low + low.upper() + _FOLD_EXTRA.get(low, "") + "]"
    if icase and not ch.isascii():
        raise Unsupported(ch)
    return "\\t" if ch == "\t" else re.escape(ch)


class _Parser:
    """Rust regex subset -> Python pattern (see the module's docstring)."""

    def __init__(self, pattern: str, icase: bool) -> None:
        self.src = pattern
        self.pos = 0
        self.icase = icase
        self.perl = False  # uses \d \w \s or their negations: ASCII files only
        self.unbounded = 0
        self.optional = 0

    def peek(self) -> str:
        return self.src[self.pos] if self.pos < len(self.src) else ""

    def take(self) -> str:
        ch = self.peek()
        if not ch:
            raise Unsupported("end")
        self.pos += 1
        return ch

    def alternation(self, depth: int) -> str:
        branches = [self.concat(depth)]
        while self.peek() == "|":
            self.pos += 1
            branches.append(self.concat(depth))
        return "|".join(branches)

    def concat(self, depth: int) -> str:
        out: list[str] = []
        while self.peek() and self.peek() not in "|)":
            atom, kind = self.atom(depth)
            out.append(atom + self.quantifier(kind))
        if not out:
            raise Unsupported("empty branch")  # matches the empty string
        return "".join(out)

    def atom(self, depth: int) -> tuple[str, str]:
        """(Python text, kind): kind is "char" (one character), "group" or "zero" (width)."""
        ch = self.take()
        if ch == "(":
            if self.src.startswith("?:", self.pos):
                self.pos += 2
            elif self.peek() == "?":
                raise Unsupported("group flags")
            if depth >= 8:
                raise Unsupported("deep")
            inner = self.alternation(depth + 1)
            if self.take() != ")":
                raise Unsupported("unclosed")
            return "(?:" + inner + ")", "group"
        if ch == "[":
            return self.bracket(), "char"
        if ch == ".":
            return ".", "char"
        if ch in "^$":
            return ch, "zero"
        if ch == "\\":
            return self.escape()
        if ch in ")]{}*+?|" or (ch < " " and ch != "\t") or ch == "\x7f":
            raise Unsupported(ch)
        return _literal(ch, self.icase), "char"

    def escape(self) -> tuple[str, str]:
        ch = self.take()
        if ch in _META:
            return _literal(ch, self.icase), "char"
        if ch == "t":
            return "\\t", "char"
        if ch in "bB":
            # rg 13 looks for a line's next match in what follows the previous one, so a
            # boundary right where that match ended is judged with nothing before it (`\b..`
            # finds "11" in "11.1", not ".1" too); Python's finditer sees the whole line.
            raise Unsupported("\\" + ch)
        if ch in "dwS":
            self.perl = True
            return "\\" + ch, "char"
        if ch in "DW":
            self.perl = True
            return "[^\\" + ch.lower() + "\\n]", "char"  # never the line terminator
        if ch == "s":
            self.perl = True
            return "[\\t\\x0b\\x0c\\r ]", "char"
        raise Unsupported("\\" + ch)

    def bracket(self) -> str:
        negated = self.peek() == "^"
        if negated:
            self.pos += 1
        members: list[str] = []
        first = True
        while True:
            ch = self.take()
            if ch == "]" and not first:
                break
            if ch == "]" or ch == "[" or (ch < " " and ch != "\t") or ch == "\x7f":
                raise Unsupported("class")
            if ch in "&~-" and self.peek() == ch:
                raise Unsupported("class set operation")
            if ch == "\\":
                esc = self.take()
                if esc in "dwS" or esc in "s" or esc in "DW":
                    self.perl = True
                    if esc == "s":
                        members.append("\\t\\x0b\\x0c\\r ")
                    elif esc in "DW" and not negated:
                        raise Unsupported("negated class in a class")  # holds \n
                    else:
                        members.append("\\" + esc)
                    first = False
                    continue
                if esc == "t":
                    ch = "\t"
                elif esc in _META or esc == "-":
                    ch = esc
                else:
                    raise Unsupported("\\" + esc)
            elif ch == "-" and not first and self.peek() != "]":
                raise Unsupported("bare '-'")
            first = False
            if self.peek() == "-" and self.src[self.pos + 1:self.pos + 2] not in ("]", ""):
                self.pos += 1
                end = self.take()
                if end in "\\[]":
                    raise Unsupported("range end")
                if end < ch:
                    raise Unsupported("range order")  # rg's error, not ours
                members.append(self.fold_range(ch, end))
                continue
            members.append(self.fold_range(ch, ch))
        if negated:
            members.append("\\n")
        return "[" + ("^" if negated else "") + "".join(members) + "]"

    def fold_range(self, lo: str, hi: str) -> str:
        text = _class_char(lo) + ("" if lo == hi else "-" + _class_char(hi))
        if not self.icase:
            return text
        if not (lo.isascii() and hi.isascii()):
            raise Unsupported("non-ASCII class under ignore-case")
        extra = ""
        for code in range(ord(lo), ord(hi) + 1):
            c = chr(code)
            if c.isalpha():
                other = c.swapcase()
                extra += other + _FOLD_EXTRA.get(c.lower(), "")
        return text + "".join(_class_char(c) for c in sorted(set(extra)))

    def quantifier(self, kind: str) -> str:
        ch = self.peek()
        if not ch or ch not in "*+?{":
            return ""
        self.pos += 1
        if ch == "{":
            close = self.src.find("}", self.pos)
            body = self.src[self.pos:close] if close > 0 else ""
            match = re.fullmatch(r"([0-9]{1,3})(,([0-9]{0,3}))?", body)
            if match is None:
                raise Unsupported("counted repetition")
            low = int(match.group(1))
            high = low if match.group(2) is None else (
                int(match.group(3)) if match.group(3) else None)
            if low > MAX_COUNT or (high is not None and (high > MAX_COUNT or high < low)):
                raise Unsupported("count")
            if low == 0:
                raise Unsupported("may be empty")
            self.pos = close + 1
            text = "{" + body + "}"
            bounded = high is not None and high <= 1
        else:
            text = ch
            bounded = ch == "?"
        if kind == "zero" or (kind == "group" and not bounded):
            raise Unsupported("quantified " + kind)
        if bounded and text != "{1}":
            self.optional += 1
        elif not bounded:
            self.unbounded += 1
        if self.peek() == "?":
            self.pos += 1
            text += "?"
        if self.peek() and self.peek() in "*+?{":
            raise Unsupported("repeated quantifier")
        return text


class Plan:
    """One grep call's search: `__call__` per batch of open files (see safe_helper.search)."""

    def __init__(self, regex: re.Pattern[str], ascii_only: bool, unbounded: int,
                 optional: int) -> None:
        self.regex = regex
        self.ascii_only = ascii_only
        self.power = 1 + unbounded
        self.factor = 1 << optional
        self.budget = BUDGET

    def cost(self, text: str) -> int:
        if self.power == 1 and self.factor == 1:
            return len(text)
        work: int = sum(len(line) ** self.power for line in text.split("\n"))
        return work * self.factor

    def searched(self, name: str, fd: int, context: int) -> list[dict[str, Any]] | None:
        try:
            return self.events(name, fd, context)
        except (OSError, MemoryError):
            return None  # rg reads it, and says what it says about it

    def events(self, name: str, fd: int, context: int) -> list[dict[str, Any]] | None:
        """rg's events for one file, or None when rg must search it."""
        size = os.fstat(fd).st_size
        if size > MAX_FILE:
            return None
        # A buffer of the file's size (and one byte more, to see it grow): one of MAX_FILE
        # for every file was a 4 MiB allocation, mapped and unmapped, per small file.
        data = os.pread(fd, size + 1, 0)
        if len(data) > size:  # it grew since fstat: read what there is, up to the bound
            data = os.pread(fd, MAX_FILE + 1, 0)
        if len(data) > MAX_FILE or b"\0" in data or data.startswith(_BOMS):
            return None
        is_ascii = data.isascii()
        if self.ascii_only and not is_ascii:
            return None
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        cost = self.cost(text)
        if cost > self.budget:
            return None
        self.budget -= cost
        started = time.monotonic()
        found = list(self.regex.finditer(text))
        if not found:
            return []
        if any(m.start() == m.end() for m in found):
            return None
        starts = list(itertools.accumulate(len(line) + 1 for line in text.split("\n")))
        starts.insert(0, 0)
        starts.pop()  # the end of the last line starts none
        if text.endswith("\n"):
            starts.pop()  # nor does the terminator of the last line
        by_line: dict[int, list[re.Match[str]]] = {}
        index = 0
        for m in found:
            while index + 1 < len(starts) and starts[index + 1] <= m.start():
                index += 1
            by_line.setdefault(index, []).append(m)
        shown: list[int] = []
        for index in sorted(by_line):
            shown.extend(range(max(0, index - context), min(len(starts), index + context + 1)))
        path = {"text": name}
        out: list[dict[str, Any]] = [{"type": "begin", "data": {"path": path}}]
        total = 0
        for index in sorted(set(shown)):
            begin = starts[index]
            end = starts[index + 1] if index + 1 < len(starts) else len(text)
            line = text[begin:end]
            offset = begin if is_ascii else len(text[:begin].encode())
            subs = []
            for m in by_line.get(index, []):
                lo, hi = m.start() - begin, m.end() - begin
                if not is_ascii:
                    lo, hi = len(line[:lo].encode()), len(line[:hi].encode())
                subs.append({"match": {"text": m.group()}, "start": lo, "end": hi})
            total += len(subs)
            event = {"type": "match" if subs else "context",
                     "data": {"path": path, "lines": {"text": line}, "line_number": index + 1,
                              "absolute_offset": offset, "submatches": subs}}
            out.append(event)
        # bytes_printed is set as the events are written (`__call__`).
        stats = {"elapsed": _elapsed(time.monotonic() - started), "searches": 1,
                 "searches_with_match": 1, "bytes_searched": len(data),
                 "bytes_printed": 0, "matched_lines": len(by_line), "matches": total}
        out.append({"type": "end", "data": {"path": path, "binary_offset": None,
                                            "stats": stats}})
        return out

    def __call__(self, entries: list[tuple[str, int]], context: int,
                 write: Callable[[bytes], None],
                 rg: Callable[[list[tuple[str, int]]], list[dict[str, Any]]]) -> None:
        """Write rg's events for the open files ENTRIES (name, fd) in their order; the files
        this code does not search are given to RG (one run) and its events put in place."""
        started = time.monotonic()
        mine = [self.searched(name, fd, context) for name, fd in entries]
        rest = [entries[i] for i, events in enumerate(mine) if events is None]
        if len(rest) == len(entries):
            for event in rg(entries):  # all rg's: its own output, summary and all
                write(json.dumps(event).encode() + b"\n")
            return
        theirs: dict[str, list[dict[str, Any]]] = {}
        for event in rg(rest) if rest else []:
            shown = ((event.get("data") or {}).get("path") or {}).get("text")
            if isinstance(shown, str):
                theirs.setdefault(shown, []).append(event)
        summary = {"bytes_printed": 0, "bytes_searched": 0, "elapsed": 0.0,
                   "matched_lines": 0, "matches": 0, "searches": 0, "searches_with_match": 0}
        for (name, _), events in ((entries[i], mine[i]) for i in range(len(entries))):
            printed = 0
            for event in theirs.get(name, []) if events is None else events:
                stats = event["data"].get("stats") if event.get("type") == "end" else None
                if events is not None and isinstance(stats, dict):
                    stats["bytes_printed"] = printed  # this route's own lines, as printed
                line = json.dumps(event).encode() + b"\n"
                printed += len(line)
                write(line)
                if isinstance(stats, dict):
                    for key in summary:
                        value = stats.get(key)
                        if key == "elapsed" and isinstance(value, dict):
                            value = value.get("secs", 0) + value.get("nanos", 0) / 1e9
                        if isinstance(value, (int, float)):
                            summary[key] += value
        totals: dict[str, Any] = dict(summary)
        totals["elapsed"] = _elapsed(float(summary["elapsed"]), sort=True)
        write(json.dumps({"data": {"elapsed_total": _elapsed(time.monotonic() - started,
                                                             sort=True),
                                   "stats": totals}, "type": "summary"}).encode() + b"\n")


def _elapsed(seconds: float, sort: bool = False) -> dict[str, Any]:
    secs = int(seconds)
    nanos = int((seconds - secs) * 1e9)
    human = f"{seconds:.6f}s"
    if sort:  # rg writes the summary's keys sorted
        return {"human": human, "nanos": nanos, "secs": secs}
    return {"secs": secs, "nanos": nanos, "human": human}


_PLANS: dict[tuple[str, bool], tuple[str, bool, int, int] | None] = {}
_UNSEEN = ("", False, 0, 0)


def plan(pattern: str, icase: bool) -> Plan | None:
    """The in-process search for PATTERN, or None when rg must run (see the docstring).
    Translations are cached per helper (compiled patterns by re's own cache)."""
    if os.environ.get("SANDLOT_GREP_PROCESS") == "1":  # tests: the rg route, always
        return None
    key = (pattern, icase)
    # Requests run in threads: one lookup, never a check then a get that a clear can split.
    found = _PLANS.get(key, _UNSEEN)
    if found is _UNSEEN:
        if len(_PLANS) > 256:
            _PLANS.clear()
        found = _PLANS[key] = _translate(pattern, icase)
    if found is None or found is _UNSEEN:
        return None
    text, ascii_only, unbounded, optional = found
    return Plan(re.compile(text, re.M | re.ASCII if ascii_only else re.M), ascii_only,
                unbounded, optional)


def _translate(pattern: str, icase: bool) -> tuple[str, bool, int, int] | None:
    if not pattern or len(pattern) > MAX_PATTERN:
        return None
    parser = _Parser(pattern, icase)
    try:
        text = parser.alternation(0)
        if parser.pos != len(pattern):
            raise Unsupported("unbalanced )")
        if parser.optional > MAX_OPTIONAL:
            raise Unsupported("too many optional parts")
        re.compile(text)
    except (Unsupported, re.error, RecursionError):
        return None
    return text, parser.perl, parser.unbounded, parser.optional
