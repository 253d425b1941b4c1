"""Real SSH through `coder ssh --stdio` to the fake agents (asyncssh client, ProxyCommand)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import asyncssh
import pytest

from sandlot.testing import AgentSpec

from .support import Coder

pytestmark = pytest.mark.anyio


async def test_round_trip_with_stdin_eof_exit_status_and_stderr(coder: Coder) -> None:
    coder.create("ssh1")
    coder.wait_ready("ssh1")
    home = coder.deployment.agent_home("ssh1")
    async with coder.connect("ssh1") as conn:
        # `cat` only ends when stdin reaches EOF: the fake must deliver it
        result = await conn.run("cat; echo done-$?; echo oops >&2; exit 7", input="from stdin\n")
        assert result.exit_status == 7
        assert result.stdout == "from stdin\ndone-0\n"
        assert result.stderr == "oops\n"
        where = await conn.run("pwd; echo $HOME", check=True)
        assert where.stdout == f"{home}\n{home}\n"
        env = await conn.run('printf %s "$GREETING"', env={"GREETING": "a b'c\"d"}, check=True)
        assert env.stdout == "a b'c\"d"
        binary = await conn.run("head -c 3 /dev/zero | od -An -tx1", check=True)
        assert binary.stdout.split() == ["00", "00", "00"]


async def test_commands_run_in_their_own_session(coder: Coder) -> None:
    coder.create("ssh2")
    coder.wait_ready("ssh2")
    async with coder.connect("ssh2") as conn:
        result = await conn.run("ps -o sid= -p $$; ps -o pid= -p $$", check=True)
        sid, pid = result.stdout.split()
        assert sid == pid  # `sh` leads its own session, like under sshd


async def test_pty_and_window_size(coder: Coder) -> None:
    coder.create("ssh3")
    coder.wait_ready("ssh3")
    async with coder.connect("ssh3") as conn:
        result = await conn.run("tty; echo $TERM; stty size", term_type="xterm", term_size=(90, 33))
        lines = result.stdout.replace("\r", "").splitlines()
        assert lines[0].startswith("/dev/pts/")
        assert lines[1:] == ["xterm", "33 90"]


async def test_signal_reaches_the_command(coder: Coder) -> None:
    coder.create("ssh4")
    coder.wait_ready("ssh4")
    async with coder.connect("ssh4") as conn:
        proc = await conn.create_process("echo started; exec sleep 30")
        assert (await proc.stdout.readline()) == "started\n"
        proc.send_signal("TERM")
        await asyncio.wait_for(proc.wait_closed(), 10)
        assert proc.exit_signal is not None and proc.exit_signal[0] == "TERM"


async def test_closing_the_channel_kills_the_process_group(coder: Coder, tmp_path: Path) -> None:
    coder.create("ssh5")
    coder.wait_ready("ssh5")
    marker = tmp_path / "survived"
    async with coder.connect("ssh5") as conn:
        proc = await conn.create_process(f"echo up; sleep 2; touch {marker}")
        assert (await proc.stdout.readline()) == "up\n"
        proc.close()
        await proc.wait_closed()
    await asyncio.sleep(3)
    assert not marker.exists()


async def test_agent_selection_forms(coder: Coder) -> None:
    coder.deployment.add_template("duo", agents=[AgentSpec("dev"), AgentSpec("db")])
    coder.create("two", template="duo")
    coder.wait_ready("two")
    owner = coder.deployment.username
    for target, agent in (
        ("two.db", "db"),
        (f"{owner}/two.dev", "dev"),
        (f"{owner}--two--db", "db"),
    ):
        async with coder.connect(target) as conn:
            result = await conn.run("printf %s $CODER_WORKSPACE_AGENT_NAME", check=True)
            assert result.stdout == agent, target
    result = coder.run("ssh", "--stdio", "two.nope")
    assert result.code == 1
    assert result.stderr.endswith(
        'error: agent not found by name "nope", available agents: [db dev]\n'
    )
    result = coder.run("ssh", "--stdio", "two")  # two agents, none named
    assert result.code == 1
    assert result.stderr.endswith(
        "error: multiple agents found, please specify the agent name, available agents: "
        f"[db dev]\nTry running:\n\t$ ssh db.two.{owner}\n\t$ ssh dev.two.{owner}\n\n"
    )


async def test_ssh_starts_a_stopped_workspace(coder: Coder) -> None:
    coder.create("sleepy")
    coder.ok("stop", "sleepy", "--yes")
    async with coder.connect("sleepy") as conn:
        result = await conn.run("echo awake", check=True)
        assert result.stdout == "awake\n"
    assert coder.list_json()[0]["latest_build"]["status"] == "running"


def test_openssh_client_with_proxycommand(coder: Coder, tmp_path: Path) -> None:
    ssh = shutil.which("ssh")
    if ssh is None:
        pytest.skip("OpenSSH client not installed; asyncssh tests cover the transport")
    coder.create("openssh")
    coder.wait_ready("openssh")
    proxy = " ".join(coder.proxy_command("openssh"))
    result = subprocess.run(
        [
            ssh,
            "-F",
            "/dev/null",
            "-o",
            f"ProxyCommand={proxy}",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            f"UserKnownHostsFile={tmp_path / 'known'}",
            "-o",
            "BatchMode=yes",
            "coder.openssh",
            "cat; exit 3",
        ],
        input="via openssh\n",
        capture_output=True,
        text=True,
        env=coder.env,
        timeout=60,
        check=False,
    )
    assert result.returncode == 3, result.stderr
    assert result.stdout == "via openssh\n"


async def test_dropped_connection_is_a_connection_loss(coder: Coder, tmp_path: Path) -> None:
    coder.create("drop")
    coder.wait_ready("drop")
    coder.deployment.drop_connection_on("BOOM", times=1)
    marker = tmp_path / "finished"
    async with coder.connect("drop") as conn:
        result = await conn.run(f"echo BOOM; sleep 2; touch {marker}")
        # asyncssh reports a channel that ended with the connection: no exit status at all
        assert result.exit_status is None and result.exit_signal is None
        assert result.stdout == "BOOM\n"
        with pytest.raises(asyncssh.ChannelOpenError):
            await conn.run("true")
    await asyncio.sleep(2.5)
    assert not marker.exists()  # the command died with the connection
    async with coder.connect("drop") as conn:  # the next connection works (times=1)
        assert (await conn.run("echo BOOM", check=True)).stdout == "BOOM\n"


async def test_large_streams_both_ways(coder: Coder) -> None:
    coder.create("bulk")
    coder.wait_ready("bulk")
    size = 8 << 20
    async with coder.connect("bulk") as conn:
        out = await conn.run(f"head -c {size} /dev/zero", encoding=None, check=True)
        assert len(out.stdout) == size
        counted = await conn.run("wc -c", input=b"y" * size, encoding=None, check=True)
        assert int(counted.stdout) == size
        many = await asyncio.gather(*(conn.run(f"echo {i}") for i in range(16)))
        assert [r.stdout for r in many] == [f"{i}\n" for i in range(16)]


def test_stdio_carries_the_agents_raw_ssh_stream(coder: Coder) -> None:
    coder.create("banner")
    coder.wait_ready("banner")
    proc = subprocess.Popen(
        [str(coder.exe), "ssh", "--stdio", "banner"],
        env=coder.env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(b"SSH-2.0-probe\r\n")
    proc.stdin.flush()
    # Nothing but SSH on stdout: the identification line of the agent's server comes first.
    assert proc.stdout.readline() == b"SSH-2.0-Go\r\n"
    proc.stdin.close()  # EOF ends the session and the command
    proc.stdout.read()
    assert proc.wait(timeout=30) == 0
    assert proc.stderr.read() == b""
