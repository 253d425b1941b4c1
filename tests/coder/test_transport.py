"""The SSH transport (src/sandlot/ssh.py): PID announcements, and the user's SSH setup left
alone -- a hostile ~/.ssh changes nothing and is not touched."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from sandlot._shell import PID_MARKER
from sandlot.backends.coder.ssh import PidAnnouncement

from .deployment import SINGLE, Deployment

pytestmark = pytest.mark.anyio


def _feed_all(chunks: list[bytes]) -> tuple[bytes, int | None]:
    announcement = PidAnnouncement()
    out = b"".join(announcement.feed(c) for c in chunks)
    if not announcement.done:
        out += announcement.finish()
    return out, announcement.pid


@pytest.mark.parametrize("split", [1, 2, 5, 13, 100])
def test_announcement_split_anywhere(split: int) -> None:
    data = PID_MARKER + b"4242\nreal stderr\n"
    chunks = [data[i : i + split] for i in range(0, len(data), split)]
    assert _feed_all(chunks) == (b"real stderr\n", 4242)


@pytest.mark.parametrize(
    "data",
    [
        b"no announcement at all\n",
        b"\x1e but not ours\n",
        PID_MARKER + b"notdigits\nrest\n",
        PID_MARKER + b"1" * 100,  # never ends: given up after the limit
        b"",
    ],
)
def test_anything_else_passes_through(data: bytes) -> None:
    out, pid = _feed_all([data[:3], data[3:]])
    assert out == data and pid is None


def test_after_the_announcement_everything_passes() -> None:
    announcement = PidAnnouncement()
    assert announcement.feed(PID_MARKER + b"7\n") == b""
    again = PID_MARKER + b"8\n"
    assert announcement.feed(again) == again
    assert announcement.pid == 7


async def test_the_users_ssh_setup_is_neither_read_nor_written(
    deployment: Deployment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    ssh = home / ".ssh"
    ssh.mkdir(parents=True)
    # Each of these would break (or reroute) a connection that consulted it.
    (ssh / "config").write_text(
        "Host *\n  ProxyCommand /bin/false\n  User nobody-here\n  Port 1\n"
        "  Ciphers none-such\n  StrictHostKeyChecking yes\n"
    )
    (ssh / "known_hosts").write_text("* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBogusBogusBogus\n")
    (ssh / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nbroken\n")
    os.chmod(ssh / "id_ed25519", 0o600)
    before = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in ssh.iterdir()}
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "no-agent.sock"))
    async with deployment.provider(
        template=deployment.template(SINGLE), on_close="delete"
    ).session() as sandbox:
        assert (await sandbox.exec("echo through")).stdout == "through\n"
        assert (await sandbox.exec("cat", stdin=b"eof")).stdout == "eof"
    after = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in ssh.iterdir()}
    assert after == before


async def test_a_server_without_exit_signals_still_gives_shell_exit_codes(
    deployment: Deployment,
) -> None:
    """Coder's agent reports a signal death as status 255; sandlot then runs each command in
    a subshell so `128 + signal` comes back, and maps its own kills to 137."""
    async with deployment.provider(
        template=deployment.template(SINGLE), on_close="delete"
    ).session() as sandbox:
        connection = sandbox.connection  # type: ignore[attr-defined]
        connection.reports_signals = False  # what the real agent does (the fake reports them)
        assert (await sandbox.exec("kill -9 $$")).exit_code == 128 + 9
        assert (await sandbox.exec(["sh", "-c", "exit 7"])).exit_code == 7
        assert (await sandbox.exec("cat", stdin="through")).stdout == "through"
        assert (await sandbox.exec("pwd")).stdout == sandbox.worktree + "\n"
        timed = await sandbox.exec("sleep 30", timeout=0.5)
        assert timed.timed_out and timed.exit_code == 128 + 9
        process = await sandbox.start("echo begun; sleep 300")
        for _ in range(600):
            if "begun" in process.stdout:
                break
            await anyio.sleep(0.05)
        killed = await process.kill()
        assert killed.exit_code == 128 + 9 and killed.stdout == "begun\n"
