"""Host-side stdio plumbing shared by backends whose commands are host processes
(local subprocesses, `docker exec` clients): interactive runs with pipes or a PTY, and the
stdin feeder / output pump of a running command."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import AsyncIterable, Awaitable, Callable
from typing import IO, BinaryIO

CHUNK = 64 << 10


async def feed_stdin(
    writer: asyncio.StreamWriter, source: bytes | AsyncIterable[bytes] | None
) -> None:
    """Write `source` to a child's stdin, then close it so the child sees EOF."""
    try:
        if isinstance(source, bytes):
            writer.write(source)
            await writer.drain()
        elif source is not None:
            async for chunk in source:
                writer.write(chunk)
                await writer.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command stopped reading: not an error of ours
    finally:
        writer.close()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await writer.wait_closed()


async def stop_feeding(feeder: asyncio.Future[None] | None) -> None:
    """Stop a `feed_stdin` task whose command has exited: what its source would still produce
    has no reader (a source that waits for more, such as a network connection, would keep the
    command's wait() waiting forever)."""
    if feeder is None or feeder.done():
        return
    feeder.cancel()
    await asyncio.wait({feeder})  # our own cancellation still propagates
    if not feeder.cancelled():
        feeder.exception()  # a write that failed as the command went: nothing to report


async def pump(
    reader: asyncio.StreamReader | None, sink: Callable[[bytes], Awaitable[None]]
) -> None:
    """Deliver a child's output to `sink` chunk by chunk until EOF."""
    assert reader is not None
    while chunk := await reader.read(CHUNK):
        await sink(chunk)


def copy_stream(src: IO[bytes], write: object) -> None:
    """Copy a host stream to a writer in a thread until EOF."""
    assert callable(write)
    while True:
        chunk = src.read1(CHUNK) if hasattr(src, "read1") else src.read(CHUNK)
        if not chunk:
            break
        write(chunk)


def run_piped(
    cmd: list[str], env: dict[str, str], stdin: BinaryIO, stdout: BinaryIO, stderr: BinaryIO
) -> int:
    import subprocess

    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

    def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            copy_stream(stdin, proc.stdin.write)
        with contextlib.suppress(BrokenPipeError, OSError):
            proc.stdin.close()

    def drain(src: IO[bytes], dst: BinaryIO) -> None:
        def write(chunk: bytes) -> None:
            dst.write(chunk)
            dst.flush()

        copy_stream(src, write)

    threading.Thread(target=feed, daemon=True).start()
    err_thread = threading.Thread(target=drain, args=(proc.stderr, stderr), daemon=True)
    err_thread.start()
    drain(proc.stdout, stdout)
    err_thread.join()
    code = proc.wait()
    return 128 - code if code < 0 else code


def run_with_pty(cmd: list[str], env: dict[str, str], stdin: BinaryIO, stdout: BinaryIO) -> int:
    import pty
    import subprocess
    import termios
    import tty as ttymod

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        cmd, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    restore = None
    with contextlib.suppress(OSError, ValueError, AttributeError, termios.error):
        if os.isatty(stdin.fileno()):
            restore = termios.tcgetattr(stdin.fileno())
            ttymod.setraw(stdin.fileno())

    def feed() -> None:
        with contextlib.suppress(OSError, ValueError):
            copy_stream(stdin, lambda chunk: os.write(master, chunk))
        # EOF on our stdin: send the terminal's EOF character, as a user typing ^D would.
        with contextlib.suppress(OSError):
            os.write(master, b"\x04")

    threading.Thread(target=feed, daemon=True).start()
    try:
        while True:
            try:
                chunk = os.read(master, CHUNK)
            except OSError:  # EIO: the child side closed
                break
            if not chunk:
                break
            stdout.write(chunk)
            stdout.flush()
    finally:
        if restore is not None:
            termios.tcsetattr(stdin.fileno(), termios.TCSADRAIN, restore)
        os.close(master)
    code = proc.wait()
    return 128 - code if code < 0 else code
