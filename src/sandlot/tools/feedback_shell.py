"""The shell an edit's checks run in, started while the edit itself runs.

An edit with feedback is the edit's round trips, then the checks' exec. That exec's start (a
process on the host, a `docker exec`, an SSH channel) does not depend on the edit, so the
toolbox starts `sh -s` as the edit begins and writes the checks' script to its stdin once the
edit is done: the start overlaps the edit instead of following it. The script goes only after
the edit's result, so the checks always see the edited file. An edit that fails (or has no
checks to run) closes the shell's stdin unused, and the shell ends at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING

import anyio

from ..feedback.checks import MAX_OUTPUT
from .runner import ScriptResult, run_script

if TYPE_CHECKING:
    from ..sandbox import Sandbox

#: How long an unused shell may take to end after its stdin closed before it is killed.
_END_GRACE = 5.0


class FeedbackShell:
    """`sh -s` in the sandbox, waiting on its stdin for one script (feedback.ScriptShell)."""

    def __init__(self, sandbox: Sandbox, env: Mapping[str, str]) -> None:
        self._text: bytes | None = None
        self._given = anyio.Event()
        self._task: asyncio.Task[ScriptResult] = asyncio.ensure_future(run_script(
            sandbox, "exec sh -s", [], name="feedback", env=env, stdin=self._stdin(),
            limit=MAX_OUTPUT))

    async def _stdin(self) -> AsyncIterator[bytes]:
        await self._given.wait()
        if self._text:
            yield self._text

    async def run(self, text: str, budget: float) -> tuple[str, bool]:
        """Run `text`; (its stdout, whether `budget` seconds ended it first). Once only."""
        if self._given.is_set():
            raise RuntimeError("a feedback shell runs one script")
        self._text = text.encode("utf-8", "surrogateescape")
        self._given.set()
        try:
            done, _ = await asyncio.wait([self._task], timeout=budget)
        except BaseException:
            await self.close()
            raise
        if not done:
            await self.close()  # the budget: the shell and every check it started are ended
            return "", True
        result = self._task.result()
        return result.stdout.decode("utf-8", "replace"), result.timed_out

    async def close(self) -> None:
        """End the shell: unused, its stdin closes and it exits by itself; otherwise (or if
        it does not exit within a grace) it is killed with everything it started."""
        with anyio.CancelScope(shield=True):
            if not self._given.is_set():
                self._given.set()  # no script: stdin ends, and so does the shell
                await asyncio.wait([self._task], timeout=_END_GRACE)
            if not self._task.done():
                self._task.cancel()  # the engine kills the command's tree and run mark
            await asyncio.wait([self._task])
            if not self._task.cancelled():
                with contextlib.suppress(BaseException):
                    self._task.result()  # retrieved: a sandbox gone meanwhile is not news here
