"""Pure parsers for what the glob and grep scripts print (ripgrep JSON, or grep with markers).

Both search engines end up as the same `GrepLine` lists, so results do not depend on whether
the sandbox has ripgrep.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field

from .models import GrepLine

MARK = "\x1e"
_FALLBACK_LINE = re.compile(r"(\d+)([:-])(.*)\Z", re.DOTALL)


@dataclass
class Listing:
    """Glob output: which lister ran, the paths, how many were cut."""

    engine: str = "find"
    paths: list[str] = field(default_factory=list)
    cut: int = 0


@dataclass
class Search:
    """Grep output, engine-neutral."""

    engine: str = "grep"
    kind: str = "dir"
    lines: list[GrepLine] = field(default_factory=list)
    binary_files: list[str] = field(default_factory=list)
    cut: int = 0


def _marker(line: str) -> tuple[str, str] | None:
    if not line.startswith(MARK):
        return None
    body = line[1:]
    word, _, rest = body.partition(" ")
    return word, rest


def contained_name(raw: bytes) -> str | None:
    """A listed name as a path relative to the search root, or None when it is not one.

    The lister prints "./"-prefixed names; anything absolute, empty or with a `.`/`..`
    component cannot come from it and is dropped (the re-check behind NUL-separated lists)."""
    name = raw[2:] if raw.startswith(b"./") else raw
    parts = name.split(b"/")
    if not name or name.startswith(b"/") or any(p in (b"", b".", b"..") for p in parts):
        return None
    return name.decode("utf-8", "replace")


def parse_listing(raw: bytes, limit: int) -> Listing:
    """`\\x1eengine NAME` then NUL-terminated paths; the first `limit` are kept, the rest
    counted in `cut` (a trailing name cut by the byte bound is dropped)."""
    out = Listing()
    records = raw.split(b"\0")
    if not raw.endswith(b"\0"):
        records.pop()  # partial: the byte bound cut it
    for record in records:
        if record.startswith(MARK.encode()):
            word, _, rest = record[1:].decode("utf-8", "replace").partition(" ")
            if word == "engine":
                out.engine = rest
            continue
        name = contained_name(record)
        if name is None:
            continue
        if len(out.paths) < limit:
            out.paths.append(name)
        else:
            out.cut += 1
    return out


def _text(obj: object) -> str | None:
    """ripgrep's `{"text": ...}` or `{"bytes": base64}` (for non-UTF-8 data)."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("text"), str):
        return str(obj["text"])
    if isinstance(obj.get("bytes"), str):
        return base64.b64decode(obj["bytes"]).decode("utf-8", "replace")
    return None


def _strip_eol(text: str) -> str:
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    return text


def parse_search(raw: bytes, limit: int) -> Search:
    """Parse either engine's output (the `\\x1eengine` line says which); keep the first
    `limit` lines (match or context) in path order and count the rest in `cut`."""
    out = Search()
    binary: set[str] = set()
    current = ""
    pos = 0
    mark = MARK.encode()[0]
    while pos < len(raw):
        if raw[pos] == mark and raw[pos + 1 : pos + 2] in (b"F", b"B"):
            end = raw.find(b"\0", pos)
            if end < 0:
                break  # cut by the byte bound
            name = contained_name(raw[pos + 2 : end]) or ""
            if raw[pos + 1 : pos + 2] == b"B":
                binary.add(name)
            current = name
            pos = end + 1
            continue
        end = raw.find(b"\n", pos)
        line = raw[pos : len(raw) if end < 0 else end].decode("utf-8", "replace")
        pos = len(raw) if end < 0 else end + 1
        marker = _marker(line)
        if marker is not None:
            if marker[0] == "engine":
                out.engine = marker[1]
            elif marker[0] == "kind":
                out.kind = marker[1]
            continue
        if out.engine == "rg":
            _rg_event(line, out, binary)
            continue
        if line == "--" or not current:
            continue
        parsed = _FALLBACK_LINE.match(line)
        if parsed:
            number, sep, text = parsed.groups()
            out.lines.append(GrepLine(path=current, line=int(number), text=_strip_eol(text),
                                      match=sep == ":"))
    binary.discard("")
    out.binary_files = sorted(binary, key=lambda p: p.encode())
    lines = [ln for ln in out.lines if ln.path and ln.path not in binary]
    lines.sort(key=lambda ln: ln.path.encode())  # stable: line order kept per file
    out.cut = max(0, len(lines) - limit)
    out.lines = lines[:limit]
    return out


def _rg_event(line: str, out: Search, binary: set[str]) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        return  # the last line may be cut by the byte bound
    kind = event.get("type")
    data = event.get("data") or {}
    shown = _text(data.get("path"))
    path = None if shown is None else contained_name(shown.encode("utf-8", "surrogateescape"))
    if path is None:
        return
    if kind in ("match", "context"):
        text = _text(data.get("lines"))
        number = data.get("line_number")
        if text is None or not isinstance(number, int):
            return
        if "\x00" in text:
            binary.add(path)
            return
        out.lines.append(GrepLine(path=path, line=number, text=_strip_eol(text),
                                  match=kind == "match"))
    elif kind == "end" and data.get("binary_offset") is not None:
        binary.add(path)
