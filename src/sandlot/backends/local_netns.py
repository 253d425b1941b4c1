"""One private network namespace for all the commands of a bubblewrap sandbox.

With `--unshare-net` on every command, each command had a loopback of its own: a server one
command started could not be reached by the next command, nor forwarded to the host. Instead a
holder process (bwrap with `--unshare-net`, waiting on its stdin) owns one namespace for the
sandbox's life, and every command joins it with `nsenter --net` before bwrap starts: the
sandbox still has no network beyond its loopback, which its commands now share.

Joining a namespace takes CAP_SYS_ADMIN over it (root, here); where that is refused the
sandbox falls back to a namespace per command and says so (forwarding then is unavailable).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import signal

import anyio

log = logging.getLogger("sandlot.local")


class SharedNetwork:
    """The holder of a sandbox's network namespace; `prefix()` joins it."""

    def __init__(self, proc: asyncio.subprocess.Process, pid: int, nsenter: str) -> None:
        self._proc = proc
        self.pid = pid
        self._nsenter = nsenter

    def prefix(self) -> list[str]:
        return [self._nsenter, f"--net=/proc/{self.pid}/ns/net", "--"]

    async def stop(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        await _end(self._proc)

    @classmethod
    async def start(cls, bwrap: str) -> SharedNetwork | None:
        """The holder, or None (logged) where commands cannot join its namespace.

        Cancel-safe: a cancel (or failure) at any point ends the holder before it is raised.
        """
        nsenter = shutil.which("nsenter")
        if nsenter is None:
            log.info("bwrap sandbox: nsenter missing; every command gets its own network")
            return None
        read_fd, write_fd = os.pipe()
        try:
            # A cancel inside this call kills bwrap (asyncio kills the child it was starting);
            # its namespaced child goes with it (--die-with-parent).
            proc = await asyncio.create_subprocess_exec(
                bwrap, "--unshare-net", "--ro-bind", "/", "/", "--dev", "/dev",
                "--proc", "/proc", "--die-with-parent", "--info-fd", str(write_fd),
                # Holds the namespace until its stdin closes: at stop(), or when this process
                # dies however it dies (nothing left behind).
                "sh", "-c", "read -r _",
                pass_fds=[write_fd], stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
        except BaseException:
            os.close(read_fd)
            raise
        finally:
            os.close(write_fd)
        # The description is read in a thread, which a cancel cannot stop: the pipe is closed
        # only once that thread is done (the holder's end closes when it ends).
        reading = asyncio.get_running_loop().run_in_executor(None, _read_info, read_fd)
        held: SharedNetwork | None = None
        try:
            held = await cls._settle(proc, reading, nsenter)
            return held
        finally:
            with anyio.CancelScope(shield=True):
                if held is None or not reading.done():
                    await _end(proc)  # failed or cancelled: no holder is left behind
                with contextlib.suppress(Exception):
                    await reading
                os.close(read_fd)

    @classmethod
    async def _settle(
        cls, proc: asyncio.subprocess.Process, reading: asyncio.Future[object], nsenter: str
    ) -> SharedNetwork | None:
        try:
            info = await asyncio.wait_for(asyncio.shield(reading), 30)
        except (TimeoutError, ValueError):
            info = None
        pid = info.get("child-pid") if isinstance(info, dict) else None
        if not isinstance(pid, int):
            await _end(proc)
            log.info("bwrap sandbox: no shared network namespace; one per command")
            return None
        held = cls(proc, pid, nsenter)
        probe = await asyncio.create_subprocess_exec(
            *held.prefix(), "true", stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL)
        if await probe.wait() != 0:
            await held.stop()
            log.info("bwrap sandbox: cannot join a network namespace (needs root); every "
                     "command gets its own network and forward_port is unavailable")
            return None
        return held


async def _end(proc: asyncio.subprocess.Process) -> None:
    """Kill the holder's group and reap it (once reaped, its pid may be another's)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


def _read_info(fd: int) -> object:
    """bwrap's --info-fd JSON object (the pipe stays open while the holder runs)."""
    decoder = json.JSONDecoder()
    text = ""
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            raise ValueError("bwrap ended before it described its namespaces")
        text += chunk.decode()
        try:
            found, _ = decoder.raw_decode(text.lstrip())
        except ValueError:
            continue
        return found
