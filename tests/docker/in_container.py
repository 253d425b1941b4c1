"""Programs the Docker tests run inside containers with python3 (the toolchain image)."""

from __future__ import annotations

# Waits until something listens on 127.0.0.1:$1 (up to 30 s; exit 1 if nothing does).
UP = r"""
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1]))).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
"""
