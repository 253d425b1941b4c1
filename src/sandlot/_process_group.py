"""Signalling a process group by its leader's pid without ever reaching a stranger.

A group is named by its leader's pid. Once the leader has been reaped, the kernel hands that
number out again as soon as no process is left in the group, and the new process may lead a
group of its own (every `setsid` or `start_new_session` child does; so does a containerd shim).
With `pid_max` at 32768 and a busy host forking hundreds of processes a second, the numbers
come round within minutes, and a `killpg` of a reaped leader's pid a little later ended a
Docker engine's shim mid-start ("failed to create shim task: ttrpc: closed").

While any member of the old group lives, the number stays taken, so a process that holds the
number now is the old leader (not yet reaped) or proof that the old group is empty.
"""

from __future__ import annotations

import contextlib
import os
import signal


def signal_group(leader: int, sig: int = signal.SIGKILL, *, reaped: bool) -> None:
    """Send `sig` to the group `leader` led. `reaped`: the leader's exit status was collected
    (its pid is free again). Missing groups and foreign processes are not errors."""
    if reaped and os.path.exists(f"/proc/{leader}"):
        return  # the number is another process's: the group it named is gone
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(leader, sig)
