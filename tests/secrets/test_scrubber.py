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


# ---- the fast paths (adr/0047): each skips work only where no form can be ------------------

FAST_PATH_SECRETS = [
    ("NL", "pa\nss-word"),  # a newline inside: a chunk ending in "\n" may still hold back
    ("META", 'a+b/c"d\\e'),  # base64 with + and /, JSON and URL escapes
    ("PLAIN", "s3cr3t-0-" + "x" * 32),
]


def _splits(data: bytes) -> list[list[bytes]]:
    """`data` cut into 2 and 3 pieces at every pair of positions."""
    out = [[data[:i], data[i:]] for i in range(len(data) + 1)]
    out += [[data[:i], data[i:j], data[j:]] for i in range(0, len(data) + 1, 3)
            for j in range(i, len(data) + 1)]
    return out


def test_every_cut_of_every_form_is_caught_by_the_stream() -> None:
    scrubber = Scrubber(FAST_PATH_SECRETS)
    for name, value in FAST_PATH_SECRETS:
        for form in forms(value):
            data = f"out\n{form}\n".encode()
            whole = scrubber.data(data)
            assert whole == f"out\n[secret:{name}]\n".encode(), form
            for pieces in _splits(data):
                stream = scrubber.stream()
                assert b"".join(stream.feed(p) for p in pieces) + stream.flush() == whole


def test_a_chunk_ending_in_a_newline_of_a_secret_is_held_back() -> None:
    stream = Scrubber([("NL", "pa\nss-word")]).stream()
    # "\n" is in the secret, but no form starts with it: nothing is held back.
    assert stream.feed(b"done\n") == b"done\n"
    assert stream.feed(b"x pa\n") == b"x "
    assert stream.feed(b"ss-word!\n") == b"[secret:NL]!\n"


def test_output_without_a_form_comes_back_as_the_same_object() -> None:
    scrubber = Scrubber(FAST_PATH_SECRETS)
    text = "".join(f"line {i} of a source file\n" for i in range(400))
    data = text.encode()
    assert scrubber.text(text) is text and scrubber.data(data) is data
    assert scrubber.cut(data) == (data, len(data))
    assert scrubber.text("s3") == "s3"  # shorter than every form


def test_a_secret_inside_another_secrets_value_keeps_both_names() -> None:
    # The pre-check looks for the shorter only; the longer must still win where it is whole.
    scrubber = Scrubber([("A", "abcd1234"), ("B", "xxabcd1234yy")])
    assert scrubber.text("1 xxabcd1234yy 2 abcd1234") == "1 [secret:B] 2 [secret:A]"
    assert scrubber.data(b"xxabcd1234y") == b"xx[secret:A]y"


def test_value_rebuilds_only_what_holds_a_secret() -> None:
    from sandlot.tools.models import ReadResult

    scrubber = Scrubber([("K", "supersecret")])
    clean = ReadResult(tool="read", ok=True, text="nothing here", workspace="w", path="f",
                       size=12, total_lines=1, start_line=1, end_line=1, more=False,
                       cut_lines=0)
    assert scrubber.value(clean) is clean
    nested = {"a": [clean, ("x", b"y")], "b": 1}
    assert scrubber.value(nested) is nested
    leaked = clean.model_copy(update={"text": "token supersecret"})
    out = scrubber.value({"a": [clean, leaked], "b": ("supersecret",)})
    assert out["a"][0] is clean and out["a"][1].text == "token [secret:K]"
    assert out["b"] == ("[secret:K]",) and leaked.text == "token supersecret"
