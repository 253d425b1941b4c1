"""`sandlot serve` as a real process: start-up, SIGTERM shutdown, start-up failures."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from sandlot.testing.ports import listen_port
from tests.helpers import require_binary

STARTUP = 120.0


class ServeProcess:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(line)
            self._queue.put(line)
        self._queue.put(None)

    def wait_for(self, needle: str, timeout: float = STARTUP) -> str:
        while True:
            line = self._queue.get(timeout=timeout)
            if line is None:
                raise AssertionError(f"serve exited before {needle!r}:\n{self.output}")
            if needle in line:
                return line

    @property
    def output(self) -> str:
        return "".join(self.lines)


@contextmanager
def sandlot_serve(
    root: Path, *args: str, env: dict[str, str] | None = None
) -> Iterator[ServeProcess]:
    config = json.dumps({"type": "local", "root": str(root), "on_close": "delete"})
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandlot", "serve", "--port", "0", "--provider-config", config,
         "--log-level", "info", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    try:
        yield ServeProcess(proc)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)


def url_of(line: str) -> str:
    return line.split("listening on ", 1)[1].split()[0]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "sandboxes"
    made.mkdir()
    return made


def test_sigterm_closes_the_sandbox(root: Path) -> None:
    require_binary("bash")
    with sandlot_serve(root, "--mode", "shell") as serve:
        url = url_of(serve.wait_for("listening on"))
        assert len(list(root.iterdir())) == 1  # the sandbox's worktree
        answer = httpx.post(f"{url}/execute", json={"code": "echo $((6 * 7))"}, timeout=60)
        assert answer.json()["stdout"] == "42\n"
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(60) == 0, serve.output
    assert list(root.iterdir()) == [], "on_close=delete did not run"


def test_sigterm_during_a_run_ends_it_and_closes(root: Path) -> None:
    require_binary("bash")
    with sandlot_serve(root, "--mode", "shell", "--shutdown-grace", "1") as serve:
        url = url_of(serve.wait_for("listening on"))
        worktree = next(root.iterdir())
        pid_file = worktree / "run.pid"
        outcome: list[object] = []

        def long_run() -> None:
            code = f"ps -o pgid= $$ > {pid_file}.tmp && mv {pid_file}.tmp {pid_file}; sleep 300"
            try:
                outcome.append(
                    httpx.post(f"{url}/execute", json={"code": code, "timeout": 280}, timeout=120)
                )
            except httpx.HTTPError as exc:
                outcome.append(exc)

        client = threading.Thread(target=long_run)
        client.start()
        for _ in range(600):
            if pid_file.exists():
                break
            threading.Event().wait(0.05)
        pgid = int(pid_file.read_text())
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(60) == 0, serve.output
        client.join(60)
        assert not client.is_alive() and outcome, "the client hung"
    answer = outcome[0]
    assert isinstance(answer, httpx.Response), answer
    assert answer.status_code == 503, answer.text
    assert answer.headers["content-type"] == "application/json"
    assert answer.json()["error"] == "shutting_down"
    assert list(root.iterdir()) == []
    assert live_members(pgid) == []  # the run's whole process group is gone


def live_members(pgid: int) -> list[int]:
    """Processes of a group that are not zombies (init here may be slow to reap them)."""
    alive = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # Fields after the parenthesised command: state, ppid, pgrp, ...
        state, _ppid, group = stat.rsplit(")", 1)[1].split()[:3]
        if int(group) == pgid and state != "Z":
            alive.append(int(entry.name))
    return alive


def test_missing_runtime_fails_start_up_clearly(root: Path, tmp_path: Path) -> None:
    only_sh = tmp_path / "only-sh"
    only_sh.mkdir()
    (only_sh / "sh").symlink_to(os.path.realpath(require_binary("sh")))
    with sandlot_serve(root, "--mode", "golang", env={"PATH": str(only_sh)}) as serve:
        assert serve.proc.wait(60) == 1
        serve.wait_for("not found", timeout=10)
    assert "mode=golang but 'go' not found in PATH" in serve.output
    assert "Traceback" not in serve.output
    assert list(root.iterdir()) == []  # the sandbox was closed


def test_public_bind_without_token_is_refused(root: Path) -> None:
    env = {"SANDLOT_TOKEN": ""}
    with sandlot_serve(root, "--host", "0.0.0.0", "--mode", "shell", env=env) as serve:
        assert serve.proc.wait(60) == 1
    assert "SANDLOT_TOKEN" in serve.output
    assert list(root.iterdir()) == []  # refused before any sandbox was made


def test_unknown_mode_lists_the_valid_ones(root: Path) -> None:
    with sandlot_serve(root, "--mode", "cobol") as serve:
        assert serve.proc.wait(60) == 1
    assert "valid modes: python, golang, node, shell" in serve.output


def test_server_token_does_not_reach_the_sandbox(root: Path) -> None:
    require_binary("bash")
    token = "serve-token-5e4d3c2b1a09f8e7d6c5"
    with sandlot_serve(root, "--mode", "shell", env={"SANDLOT_TOKEN": token}) as serve:
        url = url_of(serve.wait_for("listening on"))
        answer = httpx.post(
            f"{url}/execute",
            json={"code": "env; cat /proc/$$/environ"},
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text
        shown = answer.json()["stdout"]
        assert "PATH=" in shown  # the command ran and printed its environment
        assert token[:12] not in shown and token[-12:] not in shown
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(60) == 0, serve.output


def test_a_deep_tree_made_by_a_run_is_removed_at_shutdown(root: Path) -> None:
    require_binary("bash")
    with sandlot_serve(root, "--mode", "shell") as serve:
        url = url_of(serve.wait_for("listening on"))
        deep = "d=.; for i in $(seq 1000); do d=$d/x; done; mkdir -p $d && echo made"
        answer = httpx.post(f"{url}/execute", json={"code": deep}, timeout=120)
        assert answer.json()["stdout"] == "made\n", answer.text
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(60) == 0, serve.output
    assert list(root.iterdir()) == [], "the worktree with a 1,000-level tree was left"


def test_forwards_reach_a_server_started_through_execute(root: Path) -> None:
    port = listen_port()
    with sandlot_serve(root, "--mode", "python") as serve:
        url = url_of(serve.wait_for("listening on"))
        # A run that starts a server which outlives it (nohup: the run's process group ends).
        code = (
            "import subprocess, time\n"
            f"subprocess.Popen(['setsid', 'python3', '-m', 'http.server', '--bind', "
            f"'127.0.0.1', '{port}'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        )
        started = httpx.post(f"{url}/execute", json={"code": code}, timeout=60)
        assert started.status_code == 200, started.text
        opened = httpx.post(f"{url}/forwards", json={"port": port}, timeout=60)
        assert opened.status_code == 200, opened.text
        body = opened.json()
        assert body["port"] == port and body["host"] == "127.0.0.1"
        assert body["url"] == f"http://127.0.0.1:{body['host_port']}"
        for _ in range(100):
            try:
                page = httpx.get(body["url"] + "/", timeout=10)
                break
            except httpx.TransportError:
                time.sleep(0.1)
        assert page.status_code == 200  # the server in the sandbox, through the forward
        again = httpx.post(f"{url}/forwards", json={"port": port}, timeout=60)
        assert again.json() == body  # one forward per port
        assert httpx.get(f"{url}/forwards", timeout=10).json() == [body]
        bad = httpx.post(f"{url}/forwards", json={"port": 0}, timeout=10)
        assert bad.status_code == 422
        closed = httpx.delete(f"{url}/forwards/{port}", timeout=10)
        assert closed.status_code == 204
        assert httpx.delete(f"{url}/forwards/{port}", timeout=10).status_code == 404
        assert httpx.get(f"{url}/forwards", timeout=10).json() == []
        with pytest.raises(httpx.ConnectError):
            httpx.get(body["url"], timeout=10)
        serve.proc.send_signal(signal.SIGTERM)
        assert serve.proc.wait(60) == 0


def test_a_second_sigterm_does_not_wait_out_the_grace(root: Path) -> None:
    """The signal policy (sandlot._interrupts): a second signal gives the graceful part up.
    uvicorn alone forced its way down on a second SIGINT only, and waited out the grace."""
    require_binary("bash")
    with sandlot_serve(root, "--mode", "shell", "--shutdown-grace", "300") as serve:
        url = url_of(serve.wait_for("listening on"))
        worktree = next(root.iterdir())
        started = worktree / "started"

        def long_run() -> None:
            with contextlib.suppress(httpx.HTTPError):
                httpx.post(f"{url}/execute", json={"code": f"touch {started}; sleep 280",
                                                   "timeout": 290}, timeout=400)

        client = threading.Thread(target=long_run, daemon=True)
        client.start()
        for _ in range(600):
            if started.exists():
                break
            threading.Event().wait(0.05)
        serve.proc.send_signal(signal.SIGTERM)
        threading.Event().wait(1)  # the shutdown is waiting for the run
        assert serve.proc.poll() is None, serve.output  # the first one waits: the grace
        serve.proc.send_signal(signal.SIGTERM)
        serve.proc.wait(90)  # the grace alone is 300 s
    assert list(root.iterdir()) == [], "on_close=delete did not run"
