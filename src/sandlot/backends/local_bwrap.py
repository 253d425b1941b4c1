"""How far bubblewrap confines a command on this host: the flags every sandbox command gets.

Run as root, bubblewrap keeps every capability unless told otherwise, so a command could
`mount -o remount,rw /` and write the host. Every command therefore runs with `--cap-drop ALL`
(its effective, permitted, inheritable and ambient sets empty), which always works. Where the
host allows it, it also runs in a user namespace of its own (`--unshare-user`): the mounts it
sees are then locked read-only by the kernel, a second wall should a capability ever come
back; and `--disable-userns` keeps it from making a nested one. Which of these this bwrap and
kernel accept is probed once per bwrap binary.
"""

from __future__ import annotations

import asyncio
import logging

log = logging.getLogger("sandlot.local")

#: Always given; bwrap has taken it since 0.2.
DROP_CAPS = ("--cap-drop", "ALL")

#: The user-namespace flags, most confining first; the first this host accepts is used.
_USERNS_CHOICES: tuple[tuple[str, ...], ...] = (
    ("--unshare-user", "--disable-userns"),
    ("--unshare-user",),
    (),
)

_probed: dict[str, tuple[str, ...]] = {}


async def confinement(bwrap: str) -> tuple[str, ...]:
    """The flags that confine every command under `bwrap` (cached per binary)."""
    if bwrap not in _probed:
        _probed[bwrap] = await _probe(bwrap)
    return _probed[bwrap]


async def _probe(bwrap: str) -> tuple[str, ...]:
    for userns in _USERNS_CHOICES:
        flags = (*userns, *DROP_CAPS)
        if await _accepted(bwrap, flags):
            if not userns:
                log.info("bwrap sandbox: no user namespace here; commands run without "
                         "capabilities in the host's")
            return flags
    # Even the capability drop alone was refused: the sandbox would be no boundary, so fail
    # loudly at the first command rather than run one with every capability.
    return DROP_CAPS


async def _accepted(bwrap: str, flags: tuple[str, ...]) -> bool:
    proc = await asyncio.create_subprocess_exec(
        bwrap, *flags, "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
        "--unshare-pid", "--die-with-parent", "true",
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        return await proc.wait() == 0
    except BaseException:
        proc.kill()
        raise
