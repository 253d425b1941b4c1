"""Shared test helpers: the CI rule for missing components lives here, in one place."""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import pytest

if TYPE_CHECKING:
    from types import ModuleType

    from sandlot import Sandbox


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip locally when a component is missing; FAIL in CI, where nothing may be missing."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required component missing in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_binary(name: str, hint: str = "") -> str:
    """The path of `name` on PATH, else skip (locally) or fail (CI) with an install hint."""
    path = shutil.which(name)
    require(path is not None, f"{name} not on PATH{'; ' + hint if hint else ''}")
    assert path is not None
    return path


def host_alive(pids: list[int]) -> list[int]:
    """The pids that still run on this host (a zombie runs nothing)."""
    alive = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.append(pid)
    return alive


def host_tagged(tag: str) -> list[int]:
    """Live host processes whose environment holds TEST_TAG=<tag>."""
    wanted = f"TEST_TAG={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                if wanted in handle.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return host_alive(found)


async def eventually(
    check: Callable[[], Awaitable[bool] | bool], *, within: float = 30.0, pause: float = 0.1,
    what: str = "the condition",
) -> None:
    """Poll `check` (sync or async) until it holds; fail after `within` seconds."""
    deadline = anyio.current_time() + within
    while True:
        outcome = check()
        if not isinstance(outcome, bool):
            outcome = await outcome
        if outcome:
            return
        if anyio.current_time() > deadline:
            raise AssertionError(f"{what} did not come about within {within:g}s")
        await anyio.sleep(pause)


async def drop_connection(sandbox: Sandbox) -> None:
    """Cut the transport under the sandbox the way a network or proxy failure would."""
    import signal

    from sandlot.backends.coder.sandbox import CoderSandbox

    if isinstance(sandbox, CoderSandbox):
        proxy = sandbox.connection._proxy_proc
        assert proxy is not None, "the sandbox has no open connection to drop"
        os.killpg(proxy.proc.pid, signal.SIGKILL)
        connection = sandbox.connection
        await eventually(lambda: not connection.connected, what="the connection drop")
    # local and docker hold no connection: every command is a process of its own.


# Live (not zombie) processes whose environment holds TEST_TAG=$1; the search skips itself.
_TAGGED_SCRIPT = r"""
me=$$
for e in /proc/[0-9]*/environ; do
  p=${e#/proc/}; p=${p%/environ}
  [ "$p" = "$me" ] && continue
  tr '\000' '\n' < "$e" 2>/dev/null | grep -qx "TEST_TAG=$1" || continue
  s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f1)
  [ -n "$s" ] && [ "$s" != Z ] && echo "$p"
done
true
"""


async def tagged_processes(backend: ModuleType, sandbox: Sandbox, tag: str) -> list[int]:
    """Live processes carrying TEST_TAG=<tag> that `sandbox`'s commands started: searched on
    the host for the local backend (bubblewrap's PID namespaces are children of the host's),
    else by a command inside the sandbox."""
    if backend.NAME.startswith("local"):
        return host_tagged(tag)
    found = await sandbox.exec(["sh", "-c", _TAGGED_SCRIPT, "sh", tag], check=True)
    return [int(pid) for pid in found.stdout.split()]


async def receive_until_eof(stream: anyio.abc.ByteReceiveStream, within: float = 60) -> bytes:
    """Everything the peer sends until its end (a half-close or a close), within a bound."""
    got = bytearray()
    with anyio.fail_after(within):
        while True:
            try:
                got += await stream.receive()
            except anyio.EndOfStream:
                return bytes(got)
