from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sandlot.output import MAX_LINE_BYTES, OutputCapture


def test_keeps_everything_under_the_limit() -> None:
    cap = OutputCapture(100)
    cap.feed(b"hello\n")
    cap.feed(b"world")
    assert cap.text() == "hello\nworld"
    assert not cap.truncated


def test_keeps_the_tail_when_over_the_limit() -> None:
    cap = OutputCapture(10)
    for i in range(1000):
        cap.feed(f"{i:04d}\n".encode())
    assert cap.truncated
    assert cap.text() == "0998\n0999\n"
    assert cap.total_bytes == 5000


def test_a_cut_multibyte_character_is_dropped_not_garbled() -> None:
    cap = OutputCapture(3)
    cap.feed("aé€".encode())  # 1 + 2 + 3 bytes; the tail starts inside é
    assert cap.text() == "€"


def test_lines_split_across_chunks_and_crlf() -> None:
    lines: list[str] = []
    cap = OutputCapture(1 << 20, lines.append)
    for chunk in [b"al", b"pha\r\nbe", b"ta\n\ngam", b"ma"]:
        cap.feed(chunk)
    cap.close()
    assert lines == ["alpha", "beta", "", "gamma"]


def test_an_endless_line_is_delivered_in_bounded_pieces() -> None:
    pieces: list[str] = []
    cap = OutputCapture(16, pieces.append)
    cap.feed(b"x" * (MAX_LINE_BYTES * 2 + 5))
    cap.close()
    assert [len(p) for p in pieces] == [MAX_LINE_BYTES, MAX_LINE_BYTES, 5]


def test_a_failing_callback_is_kept_and_stops_callbacks() -> None:
    calls: list[str] = []

    def bad(line: str) -> None:
        calls.append(line)
        raise ValueError("nope")

    cap = OutputCapture(100, bad)
    cap.feed(b"a\nb\n")
    assert calls == ["a"]
    assert isinstance(cap.callback_error, ValueError)
    assert cap.text() == "a\nb\n"


@given(st.lists(st.binary(max_size=50), max_size=40), st.integers(min_value=0, max_value=64))
def test_tail_equals_the_last_bytes(chunks: list[bytes], limit: int) -> None:
    cap = OutputCapture(limit)
    for chunk in chunks:
        cap.feed(chunk)
    whole = b"".join(chunks)
    assert cap.truncated == (len(whole) > limit)
    if not cap.truncated:
        assert cap.text() == whole.decode("utf-8", errors="replace")
    assert len(cap.text().encode("utf-8", errors="surrogatepass")) <= max(limit * 3, limit)
