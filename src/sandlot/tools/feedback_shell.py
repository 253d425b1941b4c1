"""The checks of an edit, started while the edit itself runs and let go once it is done.

An edit with feedback is the edit's round trips, then the checks' exec. Which checks run does
not depend on the edit's outcome (the file's name decides), and neither does the start of
their script: the exec's start (a process on the host, a `docker exec`, an SSH channel) and
each check's subshell. So the toolbox starts the checks' script gated
(feedback.script.build(gated=True)) as the edit begins, and once the edit is done writes one
line per check to the script's stdin: what looks at the files (cd, `when`, `command -v`, the
tools) runs after the edit, and sees the edited file. An edit that fails (or is cancelled)
closes that stdin without a line: every check ends without running anything, and so does the
script.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

import anyio

from ..feedback.checks import MAX_OUTPUT, Planned
from ..feedback.script import GO, build
from .runner import ScriptResult, run_script

if TYPE_CHECKING:
    from ..sandbox import Sandbox

#: How long an unused script may take to end after its stdin closed before it is killed.
_END_GRACE = 5.0


class FeedbackShell:
    """`planned`'s checks, gated, started in the sandbox (feedback.ScriptShell)."""

    def __init__(self, sandbox: Sandbox, env: Mapping[str, str], planned: Planned) -> None:
        self.planned = planned
        self._go = False
        self._decided = anyio.Event()
        self._task: asyncio.Task[ScriptResult] = asyncio.ensure_future(run_script(
            sandbox, build(planned.checks, planned.token, gated=True), [], name="feedback",
            env=env, stdin=self._stdin(), limit=MAX_OUTPUT))

    async def _stdin(self) -> AsyncIterator[bytes]:
        await self._decided.wait()
        if self._go:
            yield GO.encode() * len(self.planned.checks)

    async def run(self, budget: float) -> tuple[str, bool]:
        """Let the checks run; (the script's stdout, whether `budget` seconds ended it).
        Once only."""
        if self._decided.is_set():
            raise RuntimeError("a feedback shell's checks run once")
        self._go = True
        self._decided.set()
        try:
            done, _ = await asyncio.wait([self._task], timeout=budget)
        except BaseException:
            await self.close()
            raise
        if not done:
            await self.close()  # the budget: the script and every check it started are ended
            return "", True
        result = self._task.result()
        return result.stdout.decode("utf-8", "replace"), result.timed_out

    async def close(self) -> None:
        """End the script: never let go, its stdin closes and every check ends without its
        tool; otherwise (or if it does not end within a grace) it is killed with its tree."""
        with anyio.CancelScope(shield=True):
            if not self._decided.is_set():
                self._decided.set()
                await asyncio.wait([self._task], timeout=_END_GRACE)
            if not self._task.done():
                self._task.cancel()  # the engine kills the command's tree and run mark
            await asyncio.wait([self._task])
            if not self._task.cancelled():
                with contextlib.suppress(BaseException):
                    self._task.result()  # retrieved: a sandbox gone meanwhile is not news here
