"""`coder ssh --stdio`: copy raw bytes between stdin/stdout and the agent's SSH socket.

Like cli/ssh.go's rawSSHCopier, the process only moves bytes; the SSH protocol is between the
caller's client (OpenSSH, asyncssh) and the agent. Stdin at EOF half-closes the socket; the
agent closing the socket ends the copy and the command exits 0.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path

from .errors import CLIError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TextIO

_CHUNK = 64 * 1024


def pipe(path: Path, stdout: TextIO) -> int:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError as exc:
        sock.close()
        raise CLIError(f"dial agent: {exc.strerror or exc}") from exc
    stdout.flush()
    out_fd = stdout.fileno()
    in_fd = 0

    def upstream() -> None:
        try:
            while True:
                data = os.read(in_fd, _CHUNK)
                if not data:
                    break
                sock.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=upstream, daemon=True).start()
    try:
        while True:
            data = sock.recv(_CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                written = os.write(out_fd, view)
                view = view[written:]
    except OSError:
        pass  # the client went away (broken pipe) or the agent reset the connection
    finally:
        sock.close()
    return 0
