"""Replace every secret form in output with `[secret:NAME]`: text, bytes, and streams.

One compiled alternation per scrubber (longest form first, so a value that contains another
secret is replaced whole); `re` narrows the candidate positions by the forms' first
characters, so output without any secret costs one C-level scan.

Streams are scrubbed across chunk and line boundaries: `StreamScrubber` holds back only the
tail that could still be the beginning of a form (at most the longest form's length minus
one byte), and emits exactly what scrubbing the whole stream at once would.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

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

    def __bool__(self) -> bool:
        return self._text is not None

    def text(self, text: str) -> str:
        if self._text is None or not text:
            return text
        return self._text.sub(lambda m: self._text_marker[m.group(0)], text)

    def data(self, data: bytes) -> bytes:
        if self._bytes is None or not data:
            return data
        return self._bytes.sub(lambda m: self._bytes_marker[m.group(0)], data)

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
        if not self.scrubber:
            return data
        buf = self._held + data if self._held else bytes(data)
        out, used = self.scrubber.cut(buf)
        self._held = buf[used:]
        return out

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return self.scrubber.data(held)


def _walk(s: Scrubber, obj: Any, data: bool) -> Any:
    if isinstance(obj, str):
        return s.text(obj)
    if isinstance(obj, bytes):
        return s.data(obj) if data else obj
    if isinstance(obj, BaseModel):
        fields = {name: _walk(s, getattr(obj, name), data) for name in type(obj).model_fields}
        return type(obj).model_construct(_fields_set=obj.model_fields_set, **fields)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {f.name: _walk(s, getattr(obj, f.name), data)
                   for f in dataclasses.fields(obj) if f.init}
        return dataclasses.replace(obj, **changes)
    if isinstance(obj, Mapping):
        return {_walk(s, k, data): _walk(s, v, data) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_walk(s, item, data) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_walk(s, item, data) for item in obj)
    return obj


def scrubber_for(secrets: Mapping[str, str]) -> Scrubber:
    """A scrubber for `{name: value}`."""
    return Scrubber(secrets.items())
