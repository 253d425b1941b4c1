"""A loopback port a test server can listen on without losing it to the host's own traffic.

A port taken at random from the kernel's ephemeral range (`ip_local_port_range`, 32768-60999
by default) can be held by an outgoing connection, or by its TIME_WAIT for a minute after it
closed; then a server's bind fails with EADDRINUSE even with SO_REUSEADDR, and a test waiting
for that server sees nothing listen. A port asked of the kernel (bind to port 0) and released
is handed to the next outgoing connection just as readily. So the port comes from below the
ephemeral range, where only explicit binds land, and is checked free on the host right now.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000


def _ephemeral_start() -> int:
    try:
        return int(_RANGE_FILE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As a server binds (http.server sets SO_REUSEADDR): a TIME_WAIT of our own listeners
        # does not count against the port, an outgoing connection's does.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def listen_port() -> int:
    """A 127.0.0.1 TCP port outside the ephemeral range that nothing holds right now, for a
    server the caller starts soon after (in the host, or in a sandbox sharing its network)."""
    top = max(_LOWEST + 1000, _ephemeral_start())
    for _ in range(200):
        port = random.randrange(_LOWEST, top)
        if _bindable(port):
            return port
    raise RuntimeError(f"no free loopback port in {_LOWEST}-{top - 1} after 200 tries")
