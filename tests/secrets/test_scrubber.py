"""The scrubber: every form of every secret replaced, in text, bytes and streams cut anywhere.

The property is the security claim: for random secrets (1-200 bytes, regex metacharacters,
newlines, any unicode) inside random output, fed in random chunks, no stretch of scrubbed
output between two markers holds a secret (the marker's own letters may be a 1-byte secret's;
what a reader sees between markers is what matters), and the stream gives exactly what
scrubbing the whole output at once gives.
"""

from __future__ import annotations

import base64
import json
import re
from urllib.parse import quote

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandlot.secrets import Scrubber
from sandlot.secrets.forms import MIN_DERIVED, base64_forms, forms

META = list(".^$*+?{}[]\\|()\n\r\t \"'%/=&-_:")
TEXT = st.text(alphabet=st.one_of(st.sampled_from(META), st.characters(codec="utf-8")),
               max_size=60)
SECRET = TEXT.filter(lambda s: 1 <= len(s.encode()) <= 200 and "\0" not in s)


def segments(data: bytes, names: list[str]) -> list[bytes]:
    markers = b"|".join(re.escape(f"[secret:{n}]".encode()) for n in names)
    return re.split(markers, data)


@st.composite
def case(draw: st.DrawFn) -> tuple[list[str], bytes, list[int]]:
    values = draw(st.lists(SECRET, min_size=1, max_size=3, unique=True))
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 8))):
        parts.append(draw(TEXT))
        value = draw(st.sampled_from(values))
        parts.append(draw(st.sampled_from(forms(value))))
    parts.append(draw(TEXT))
    data = "".join(parts).encode()
    cuts = sorted(draw(st.lists(st.integers(0, len(data)), max_size=12)))
    return values, data, cuts


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case())
def test_no_scrubbed_output_holds_a_secret(given_case: tuple[list[str], bytes, list[int]]
                                           ) -> None:
    values, data, cuts = given_case
    names = [f"S{i}" for i in range(len(values))]
    scrubber = Scrubber(zip(names, values, strict=True))
    whole = scrubber.data(data)
    stream = scrubber.stream()
    pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    streamed = b"".join(stream.feed(piece) for piece in pieces) + stream.flush()
    assert streamed == whole
    for value in values:
        raw = value.encode()
        assert all(raw not in part for part in segments(whole, names))
    text = scrubber.text(data.decode())
    assert text.encode() == whole
    # A reader with a cursor (bash_output, the server's process output) gets the same.
    got, at = b"", 0
    for end in [*cuts, len(data)]:
        out, used = scrubber.cut(data[at:end], final=end == len(data))
        got, at = got + out, at + used
    assert got == whole


def test_each_form_of_a_secret_is_replaced() -> None:
    value = 'tok/en+"é?&x=1'
    scrubber = Scrubber([("API", value)])
    raw = value.encode()
    samples = [
        value,
        base64.b64encode(raw).decode(),
        base64.b64encode(b"a" + raw).decode(),
        base64.b64encode(b"ab" + raw).decode(),
        base64.urlsafe_b64encode(b"a" + raw).decode(),
        quote(value, safe=""),
        json.dumps({"k": value}),
        json.dumps({"k": value}, ensure_ascii=False),
    ]
    for sample in samples:
        out = scrubber.text(f"<{sample}>")
        assert "[secret:API]" in out, sample
        assert value not in out
        assert all(piece not in out for piece in base64_forms(raw))


def test_longest_form_wins_and_names_are_kept() -> None:
    scrubber = Scrubber([("SHORT", "abc123"), ("LONG", "abc123-and-more")])
    assert scrubber.text("x abc123-and-more y abc123") == "x [secret:LONG] y [secret:SHORT]"


def test_short_derived_forms_are_not_scrubbed_but_the_value_is() -> None:
    scrubber = Scrubber([("K", "ab")])
    assert all(len(f) >= MIN_DERIVED for f in forms("ab")[1:])
    assert scrubber.text("cab YWI=") == "c[secret:K] YWI="


def test_stream_holds_back_only_a_possible_start() -> None:
    stream = Scrubber([("K", "supersecret")]).stream()
    # A line that cannot start a secret comes out at once (progress stays live).
    assert stream.feed(b"building...\n") == b"building...\n"
    assert stream.feed(b"token: sup") == b"token: "
    assert stream.feed(b"ersecr") == b""
    assert stream.feed(b"et!\n") == b"[secret:K]!\n"
    assert stream.feed(b"sup") == b""
    assert stream.flush() == b"sup"


def test_an_empty_scrubber_changes_nothing() -> None:
    scrubber = Scrubber()
    assert not scrubber
    assert scrubber.text("x") == "x" and scrubber.stream().feed(b"y") == b"y"
    assert scrubber.value({"a": ["b"]}) == {"a": ["b"]}
