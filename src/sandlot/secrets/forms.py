"""The forms a secret's value takes in output: itself, base64, URL-encoded, JSON-escaped.

A command leaks a token as it is (`env`, a verbose curl), base64-encoded (a Basic auth header,
a Kubernetes secret, a docker config), URL-encoded (a URL's userinfo or query) or JSON-escaped
(a config file, a structured log). Pure functions: value in, literal strings out.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, quote_plus

#: A derived form shorter than this is not scrubbed: a short secret's base64 fragment is a
#: few letters that occur in ordinary output (the value itself is always scrubbed).
MIN_DERIVED = 4


def base64_forms(raw: bytes) -> list[str]:
    """The base64 characters that depend only on `raw`, at each of the 3 offsets it can start
    at within a longer encoded stream (standard and URL-safe alphabets)."""
    out: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + raw + b"\0\0").decode("ascii")
        # Character i covers bits [6i, 6i+6); the secret holds bits [8*offset, 8*(offset+n)).
        first = -(-8 * offset // 6)
        last = (8 * (offset + len(raw))) // 6  # exclusive
        piece = encoded[first:last]
        out.append(piece)
        out.append(piece.replace("+", "-").replace("/", "_"))
    return out


def forms(value: str) -> list[str]:
    """Every form of `value` to scrub, the value itself first, without duplicates."""
    raw = value.encode("utf-8", "surrogateescape")
    derived = [
        *base64_forms(raw),
        quote(value, safe=""),
        quote(value),
        quote_plus(value, safe=""),
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
    ]
    out = [value]
    for form in derived:
        if len(form) >= MIN_DERIVED and form not in out:
            out.append(form)
    return out
