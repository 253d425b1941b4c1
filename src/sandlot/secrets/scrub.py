"""Replace every secret form in output with `[secret:NAME]`: text, bytes, and streams.

One compiled alternation per scrubber (longest form first, so a value that contains another
secret is replaced whole), built once per secret set. Before any regex work, output is
checked with `in` for each of a few needles (the forms none of which holds another: a text
without them holds no form): a substring search in C is several times faster than the
alternation's scan, which starts at every position holding some form's first character.
Output shorter than the shortest form, or without a needle, comes back as the same object.

Streams are scrubbed across chunk and line boundaries: `StreamScrubber` holds back only the
tail that could still be the beginning of a form (at most the longest form's length minus
one byte), and emits exactly what scrubbing the whole stream at once would. Such a tail is
made only of bytes that occur in the forms' proper prefixes, so a chunk ending in any other
byte (a newline, for most secrets) holds nothing back without a search.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, AnyStr, TypeVar

from pydantic import BaseModel

from .forms import forms
from .value import marker

T = TypeVar("T")


class Scrubber:
    """Scrubs the given `(name, value)` pairs. Immutable; an empty scrubber changes nothing."""

    def __init__(self, secrets: Iterable[tuple[str, str]] = ()) -> None:
        by_form: dict[str, str] = {}
        for name, value in secrets:
            for form in forms(value):
                by_form.setdefault(form, name)
        ordered = sorted(by_form, key=len, reverse=True)
        self.names = sorted(set(by_form.values()))
        self._text_marker = {form: marker(name) for form, name in by_form.items()}
        self._bytes_marker = {
            form.encode("utf-8", "surrogateescape"): marker(name).encode()
            for form, name in by_form.items()
        }
        self._text = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        encoded = [form.encode("utf-8", "surrogateescape") for form in ordered]
        self._bytes = re.compile(b"|".join(map(re.escape, encoded))) if encoded else None
        self.longest = max((len(form) for form in encoded), default=0)
        # For streams: the forms by first byte, and a pattern finding those bytes.
        self._by_first: dict[int, list[bytes]] = {}
        for form_bytes in encoded:
            self._by_first.setdefault(form_bytes[0], []).append(form_bytes)
        starts = b"".join(re.escape(bytes([b])) for b in sorted(self._by_first))
        self._starts = re.compile(b"[" + starts + b"]") if starts else None
        # The fast paths (see the module's doc): output shorter than every form, or holding
        # none of the needles, holds no form; a stream's undecided tail is made of `_inner`.
        self._shortest = min((len(form) for form in ordered), default=0)
        self._shortest_bytes = min((len(form) for form in encoded), default=0)
        self._needles = _needles(ordered)
        self._byte_needles = _needles(encoded)
        self._inner = bytes(sorted({b for form in encoded for b in form[:-1]}))

    def __bool__(self) -> bool:
        return self._text is not None

    def text(self, text: str) -> str:
        if self._text is None or len(text) < self._shortest or not any(
                needle in text for needle in self._needles):
            return text
        return self._text.sub(lambda m: self._text_marker[m.group(0)], text)

    def data(self, data: bytes) -> bytes:
        if self._bytes is None or not self._may_hold(data):
            return data
        return self._bytes.sub(lambda m: self._bytes_marker[m.group(0)], data)

    def _may_hold(self, data: bytes) -> bool:
        """Whether `data` may hold a whole form (False: it surely holds none)."""
        return len(data) >= self._shortest_bytes and any(
            needle in data for needle in self._byte_needles)

    def value(self, obj: T, *, data: bool = True) -> T:
        """`obj` with every string in it scrubbed: str, bytes (unless `data=False`), lists,
        tuples, dicts (keys too), dataclasses and pydantic models (rebuilt without
        validation, same class)."""
        if self._text is None:
            return obj
        return _walk(self, obj, data)  # type: ignore[no-any-return]

    def stream(self) -> StreamScrubber:
        return StreamScrubber(self)

    def cut(self, buf: bytes, final: bool = False) -> tuple[bytes, int]:
        """Scrub the decided part of `buf`, a stream's bytes from some point on: (scrubbed
        bytes, how many bytes of `buf` they stand for). The rest could still become a secret
        with the bytes that follow; give it again with them (or with `final=True` at the
        stream's end, which uses all of `buf`). For a reader that keeps a cursor, not state.
        """
        if self._bytes is None:
            return buf, len(buf)
        if final:
            return self.data(buf), len(buf)
        hold = self._hold_from(buf, 0)
        if not self._may_hold(buf):  # nothing to replace: only the tail to keep back
            return (buf if hold == len(buf) else buf[:hold]), hold
        out: list[bytes] = []
        pos = 0
        for match in self._bytes.finditer(buf):
            if match.start() >= hold:
                break  # undecided: a longer form may still match there
            out.append(buf[pos:match.start()])
            out.append(self._bytes_marker[match.group(0)])
            pos = match.end()
        end = max(hold, pos)
        out.append(buf[pos:end])
        return b"".join(out), end

    # ---- for StreamScrubber ---------------------------------------------------------------

    def _hold_from(self, buf: bytes, start: int) -> int:
        """The first position >= `start` from which `buf`'s rest is a proper prefix of some
        form (it may become a match once more bytes come); len(buf) when there is none."""
        assert self._starts is not None
        window = max(start, len(buf) - (self.longest - 1))
        # A proper prefix of a form holds only `_inner` bytes: the search starts where buf's
        # longest run of them at its end does (rstrip of a small slice, in C; usually the last
        # byte is a newline or other byte outside every form and the run is empty).
        tail = buf[window:]
        window += len(tail.rstrip(self._inner))
        if window >= len(buf):
            return len(buf)
        for found in self._starts.finditer(buf, window):
            at = found.start()
            rest = buf[at:]
            for form in self._by_first[buf[at]]:
                if len(form) > len(rest) and form.startswith(rest):
                    return at
        return len(buf)


class StreamScrubber:
    """Scrubs a byte stream fed in arbitrary chunks; `flush()` at its end."""

    def __init__(self, scrubber: Scrubber) -> None:
        self.scrubber = scrubber
        self._held = b""

    def feed(self, data: bytes) -> bytes:
        scrubber = self.scrubber
        if scrubber._bytes is None:
            return data
        buf = self._held + data if self._held else bytes(data)
        out, used = scrubber.cut(buf)
        self._held = buf[used:] if used < len(buf) else b""
        return out

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return self.scrubber.data(held)


#: Types that hold no string (a result's counts and flags): returned before any other test.
_ATOMS = frozenset({int, float, bool, type(None)})


def _walk(s: Scrubber, obj: Any, data: bool) -> Any:
    """`obj` scrubbed; `obj` itself (not a copy) when nothing in it changed, so a result
    without a secret costs the needle checks of its strings and no rebuilding."""
    if type(obj) in _ATOMS:
        return obj
    if isinstance(obj, str):
        return s.text(obj)
    if isinstance(obj, bytes):
        return s.data(obj) if data else obj
    if isinstance(obj, BaseModel):
        names = type(obj).model_fields
        fields = {name: _walk(s, getattr(obj, name), data) for name in names}
        if all(fields[name] is getattr(obj, name) for name in names):
            return obj
        return type(obj).model_construct(_fields_set=obj.model_fields_set, **fields)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        old = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}
        changes = {name: _walk(s, value, data) for name, value in old.items()}
        if all(changes[name] is old[name] for name in old):
            return obj
        return dataclasses.replace(obj, **changes)
    if isinstance(obj, Mapping):
        pairs = [(k, v, _walk(s, k, data), _walk(s, v, data)) for k, v in obj.items()]
        if isinstance(obj, dict) and all(k2 is k and v2 is v for k, v, k2, v2 in pairs):
            return obj
        return {k2: v2 for _k, _v, k2, v2 in pairs}
    if isinstance(obj, list):
        items = [_walk(s, item, data) for item in obj]
        return obj if all(a is b for a, b in zip(items, obj, strict=True)) else items
    if isinstance(obj, tuple):
        scrubbed = tuple(_walk(s, item, data) for item in obj)
        same = type(obj) is tuple and all(a is b for a, b in zip(scrubbed, obj, strict=True))
        return obj if same else scrubbed
    return obj


def _needles(forms: Sequence[AnyStr]) -> list[AnyStr]:
    """The forms that hold no other form, shortest first: a string holding none of them holds
    no form (each form holds one of them), so `in` on each is a complete pre-check."""
    out: list[AnyStr] = []
    for form in sorted(forms, key=len):
        if not any(needle in form for needle in out):
            out.append(form)
    return out


def scrubber_for(secrets: Mapping[str, str]) -> Scrubber:
    """A scrubber for `{name: value}`."""
    return Scrubber(secrets.items())
