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


def parse_listing(raw: bytes) -> Listing:
    """`\\x1eengine NAME`, one path per line, then maybe `\\x1ecut N`."""
    out = Listing()
    for line in raw.decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        marker = _marker(line)
        if marker is None:
            out.paths.append(line)
        elif marker[0] == "engine":
            out.engine = marker[1]
        elif marker[0] == "cut":
            out.cut = int(marker[1] or 0)
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


def parse_search(raw: bytes) -> Search:
    """Parse either engine's output (the `\\x1eengine` line says which)."""
    out = Search()
    binary: set[str] = set()
    current = ""
    for line in raw.decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        marker = _marker(line)
        if marker is not None:
            word = marker[0]
            if word == "engine":
                out.engine = marker[1]
            elif word == "cut":
                out.cut = int(marker[1] or 0)
            elif word == "kind":
                out.kind = marker[1]
            elif word.startswith("F"):
                current = line[2:]
            elif word.startswith("B"):
                binary.add(line[2:])
            continue
        if out.engine == "rg":
            _rg_event(line, out, binary)
            continue
        if line == "--":
            continue
        parsed = _FALLBACK_LINE.match(line)
        if parsed and current:
            number, sep, text = parsed.groups()
            out.lines.append(GrepLine(path=current, line=int(number), text=_strip_eol(text),
                                      match=sep == ":"))
    out.binary_files = sorted(binary, key=lambda p: p.encode())
    out.lines = [ln for ln in out.lines if ln.path not in binary]
    out.lines.sort(key=lambda ln: ln.path.encode())  # stable: line order kept per file
    return out


def _rg_event(line: str, out: Search, binary: set[str]) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        return  # the last line may be cut by the byte bound
    kind = event.get("type")
    data = event.get("data") or {}
    path = _text(data.get("path"))
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
