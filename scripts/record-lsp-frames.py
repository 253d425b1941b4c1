#!/usr/bin/env python3
"""Record what a real language server writes on stdout, for the framing parser's tests.

    .venv/bin/python scripts/record-lsp-frames.py

Runs gopls (from scripts/setup.d/50-language-servers.sh) over tests/fixtures/lsp/go with a
short session -- initialize, initialized, didOpen, hover, shutdown, exit -- and writes its raw
stdout to tests/fixtures/lsp/recorded/gopls-session.bin, and the hover's request id beside it.
tests/unit/test_lsp_frames.py cuts that recording at every byte and checks the messages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "lsp" / "recorded" / "gopls-session.bin"
SERVERS = Path(os.environ.get("SANDLOT_LANGUAGE_SERVERS", "/opt/sandlot/language-servers"))


def frame(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "go"
        shutil.copytree(REPO / "tests" / "fixtures" / "lsp" / "go", root)
        uri = (root / "cmd" / "shop" / "main.go").as_uri()
        text = (root / "cmd" / "shop" / "main.go").read_text()
        messages = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "processId": None, "rootUri": root.as_uri(), "capabilities": {
                    "window": {"workDoneProgress": True}}}},
            {"jsonrpc": "2.0", "method": "initialized", "params": {}},
            {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
                "uri": uri, "languageId": "go", "version": 1, "text": text}}},
            {"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover", "params": {
                "textDocument": {"uri": uri}, "position": {"line": 16, "character": 1}}},
        ]
        server = subprocess.Popen([str(SERVERS / "bin" / "gopls")], cwd=root,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert server.stdin is not None and server.stdout is not None
        raw = bytearray()
        lock = threading.Lock()

        def send(message: dict[str, object]) -> None:
            with lock:
                assert server.stdin is not None
                server.stdin.write(frame(message))
                server.stdin.flush()

        def pump() -> None:
            """Keep every byte; answer the server's own requests (progress tokens), which it
            waits for before going on."""
            assert server.stdout is not None
            while True:
                header = b""
                while not header.endswith(b"\r\n\r\n"):
                    byte = server.stdout.read(1)
                    if not byte:
                        return
                    header += byte
                length = int(header.split(b":")[1].split(b"\r")[0])
                body = server.stdout.read(length)
                raw.extend(header + body)
                message = json.loads(body)
                if "method" in message and "id" in message:
                    send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                if message.get("id") == 3 and "method" not in message:
                    return

        reader = threading.Thread(target=pump)
        reader.start()
        for message in messages:
            send(message)
        time.sleep(8)  # the hover waits for the load; progress and diagnostics arrive too
        send({"jsonrpc": "2.0", "id": 3, "method": "shutdown"})
        reader.join(60)
        send({"jsonrpc": "2.0", "method": "exit"})
        server.wait(30)
        out = bytes(raw)
    # The temporary root's path is in the recording; the tests do not depend on it.
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_bytes(out)
    print(f"wrote {OUT} ({len(out)} bytes)")


if __name__ == "__main__":
    main()
