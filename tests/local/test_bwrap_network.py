"""A bwrap sandbox's commands share one private network: a server one command starts is
reached by the next command and forwarded to the host, while the host's own ports stay out of
reach from inside."""

from __future__ import annotations

import random
import socket

import anyio
import pytest

import sandlot
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio


async def test_commands_share_a_loopback_the_host_cannot_see() -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    port = random.randint(20000, 45000)
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
