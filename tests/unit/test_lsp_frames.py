"""The LSP framing parser on a session recorded from real gopls (scripts/record-lsp-frames.py),
cut at every byte: the same messages whatever the chunks; and the limits on what a server may
send (it is untrusted input)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandlot.lsp.rpc import FrameError, FrameReader, encode

RECORDED = (Path(__file__).resolve().parents[1] / "fixtures" / "lsp" / "recorded"
            / "gopls-session.bin")


def test_the_recorded_session_parses_whole_and_cut_at_every_byte() -> None:
    data = RECORDED.read_bytes()
    whole = FrameReader().feed(data)
    methods = [m.get("method") for m in whole]
    assert "$/progress" in methods and "textDocument/publishDiagnostics" in methods
    hover = next(m for m in whole if m.get("id") == 2 and "result" in m)
    assert hover["result"]["contents"]["value"] == "```go\nvar cents int\n```"
    assert whole[-1] == {"jsonrpc": "2.0", "result": None, "id": 3}
    for cut in range(1, len(data)):
        reader = FrameReader()
        assert reader.feed(data[:cut]) + reader.feed(data[cut:]) == whole
    reader = FrameReader()
    assert [m for i in range(len(data)) for m in reader.feed(data[i:i + 1])] == whole


def test_encode_is_what_the_reader_reads_back() -> None:
    message = {"jsonrpc": "2.0", "id": 7, "params": {"text": "tea \U0001f375 caf\u00e9"}}
    assert FrameReader().feed(encode(message)) == [message]
    # Content-Length counts bytes, not characters.
    assert encode(message).startswith(b"Content-Length: %d\r\n" % len(
        json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()))


@pytest.mark.parametrize(("data", "says"), [
    (b"Content-Length: 99999999999\r\n\r\n", "over the"),
    (b"Content-Type: x\r\n\r\n", "without Content-Length"),
    (b"Content-Length: ten\r\n\r\n", "not a number"),
    (b"garbage\r\n\r\n", "without ':'"),
    (b"Content-Length: 3\r\n\r\n{x}", "not JSON"),
    (b"x" * 9000, "longer than 8 KiB"),
])
def test_a_broken_stream_is_a_frame_error(data: bytes, says: str) -> None:
    with pytest.raises(FrameError, match=says):
        FrameReader(limit=1 << 20).feed(data)
