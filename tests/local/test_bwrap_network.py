"""A bwrap sandbox's commands share one private network: a server one command starts is
reached by the next command and forwarded to the host, while the host's own ports stay out of
reach from inside."""

from __future__ import annotations

import socket

import anyio
import pytest

import sandlot
from sandlot.testing.ports import listen_port
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio


async def test_commands_share_a_loopback_the_host_cannot_see() -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    port = listen_port()
    with socket.socket() as host_listener:  # a host port: not visible from the sandbox
        host_listener.bind(("127.0.0.1", 0))
        host_listener.listen(1)
        host_port = host_listener.getsockname()[1]
        async with sandlot.local(isolation="bwrap").session() as sandbox:
            server = await sandbox.start(["python3", "-m", "http.server", "--bind", "127.0.0.1",
                                          str(port)])
            try:
                probe = ("import sys, urllib.request\n"
                         "print(urllib.request.urlopen(sys.argv[1], timeout=5).status)")
                for _ in range(100):
                    got = await sandbox.exec(["python3", "-c", probe,
                                              f"http://127.0.0.1:{port}/"])
                    if got.exit_code == 0:
                        break
                    await anyio.sleep(0.1)
                assert got.stdout.strip() == "200", got.stderr
                outside = await sandbox.exec(["python3", "-c", probe,
                                              f"http://127.0.0.1:{host_port}/"])
                assert outside.exit_code != 0 and "refused" in outside.stderr.lower()
            finally:
                await server.kill()


async def test_no_relay_program_is_a_typed_error_before_listening(tmp_path: object) -> None:
    from pathlib import Path

    from sandlot.forward import ForwardRelayMissingError

    require_binary("bwrap", "apt-get install bubblewrap")
    bare = Path(str(tmp_path)) / "bin"
    bare.mkdir()
    (bare / "sh").symlink_to("/bin/sh")  # a shell, and no python3, socat, nc or busybox
    provider = sandlot.local(isolation="bwrap", env={"PATH": str(bare)})
    async with provider.session() as sandbox:
        with pytest.raises(ForwardRelayMissingError, match="python3, socat, nc"):
            async with sandbox.forward_port(8080):
                raise AssertionError("a forward opened without a relay program")


def _gone(pid: int) -> bool:
    """Whether `pid` stops running within 10 s (a zombie runs nothing)."""
    import time

    from tests.helpers import host_alive

    deadline = time.monotonic() + 10
    while host_alive([pid]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not host_alive([pid])


async def test_the_network_holder_ends_with_the_sandbox() -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    async with sandlot.local(isolation="bwrap").session() as sandbox:
        network = sandbox._network  # type: ignore[attr-defined]
        assert network is not None
        held = network.pid
    assert _gone(held), "the holder outlived the closed sandbox"


def test_the_network_holder_ends_with_its_owner() -> None:
    import subprocess
    import sys

    require_binary("bwrap", "apt-get install bubblewrap")
    # An owner killed outright (no close at all) takes the holder with it.
    owner = subprocess.Popen([sys.executable, "-c", (
        "import asyncio, sandlot\n"
        "async def main():\n"
        "    box = await sandlot.local(isolation='bwrap').create()\n"
        "    print(box._network.pid, flush=True)\n"
        "    await asyncio.sleep(300)\n"
        "asyncio.run(main())\n")], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    orphan = int(owner.stdout.readline())
    owner.kill()
    owner.wait()
    assert _gone(orphan), "the holder outlived its owner"
