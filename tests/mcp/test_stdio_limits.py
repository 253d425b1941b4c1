"""An over-long JSON-RPC line over stdio is that message's error, not the server's end
(issue 35.8, adr/0032): the line is discarded as it streams, the client gets an error with a
null id, and the next message is served."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from sandlot.tools.registry import TOOLS
from tests.mcp.support import command, env

CHUNK = b"x" * (1 << 20)
BIG_MB = 300


def _request(id_: int | None, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


INIT = _request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "limits-test", "version": "1"}})


def _big_line() -> Iterator[bytes]:
    """A 300 MB request line, streamed: the test never holds it."""
    yield b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "write", '
    yield b'"arguments": {"path": "big.txt", "content": "'
    for _ in range(BIG_MB):
        yield CHUNK
    yield b'"}}}\n'


def _answer(out: IO[bytes]) -> dict[str, Any]:
    line = out.readline()
    assert line, "sandlot mcp closed its stdout"
    answer: dict[str, Any] = json.loads(line)
    return answer


def _peak_rss_mb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM in /proc/PID/status")


def test_a_300_mb_line_is_answered_with_an_error_and_the_server_goes_on(tmp_path: Path) -> None:
    errlog = (tmp_path / "stderr").open("wb")
    proc = subprocess.Popen(command(), env=env(), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=errlog)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(INIT)
        proc.stdin.flush()
        assert _answer(proc.stdout)["id"] == 1
        proc.stdin.write(_request(None, "notifications/initialized"))
        failure: list[BaseException] = []

        def send_big() -> None:
            assert proc.stdin is not None
            try:
                for piece in _big_line():
                    proc.stdin.write(piece)
                proc.stdin.write(_request(3, "tools/list"))
                proc.stdin.flush()
            except BaseException as exc:  # BrokenPipe when the server died
                failure.append(exc)

        writer = threading.Thread(target=send_big, daemon=True)
        writer.start()
        error = _answer(proc.stdout)
        assert error["id"] is None, error
        assert error["error"]["code"] == -32600
        assert "exceeds this server's limit" in error["error"]["message"]
        listed = _answer(proc.stdout)
        assert listed["id"] == 3, listed
        assert len(listed["result"]["tools"]) == len(TOOLS) - 1  # not secret_env
        # The line was not held: the server's peak memory stays far below its size.
        peak = _peak_rss_mb(proc.pid)
        assert peak < BIG_MB * 0.8, f"peak RSS {peak} MB"
        writer.join(120)
        assert not failure, failure
        # Still serving after the error: a call works and nothing of the big line was written.
        proc.stdin.write(_request(4, "tools/call", {"name": "glob",
                                                    "arguments": {"pattern": "big.txt"}}))
        proc.stdin.flush()
        globbed = _answer(proc.stdout)
        assert globbed["id"] == 4
        assert "no files match" in globbed["result"]["content"][0]["text"], globbed
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=60)
        errlog.close()
    stderr = (tmp_path / "stderr").read_text()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
