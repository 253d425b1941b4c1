"""`sandlot exec --forward`: the URL is printed while the command runs and reaches the server
the command started in the sandbox."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from sandlot.testing.ports import listen_port

REPO = Path(__file__).resolve().parents[2]


def test_exec_forward_prints_a_url_that_reaches_the_command(tmp_path: Path) -> None:
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "hello.txt").write_text("from the sandbox\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("SANDLOT_PROVIDER", None)
    port = listen_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandlot", "exec", "--copy-in", str(tmp_path / "site"),
         "--forward", str(port), "--", f"exec python3 -m http.server --bind 127.0.0.1 {port}"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        url = None
        for line in proc.stderr:
            found = re.search(rf"sandbox port {port} is at (http://127\.0\.0\.1:\d+)", line)
            if found:
                url = found.group(1)
                break
        assert url is not None, "no URL printed"
        deadline = time.monotonic() + 60
        while True:
            try:
                answer = httpx.get(f"{url}/hello.txt", timeout=10)
                break
            except httpx.TransportError:
                assert proc.poll() is None, f"sandlot exec ended: {proc.stderr.read()}"
                assert time.monotonic() < deadline, "the server never answered"
                time.sleep(0.2)
        assert answer.status_code == 200 and answer.text == "from the sandbox\n"
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    # SIGTERM ends sandlot exec as Ctrl-C does: the sandbox closed, its server with it.
    assert proc.returncode == 143
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/hello.txt", timeout=5)


def test_a_bad_forward_is_a_usage_error() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run([sys.executable, "-m", "sandlot", "exec", "--forward", "x:y", "--",
                           "true"], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 2
    assert "--forward needs PORT or LOCAL:PORT" in done.stderr
