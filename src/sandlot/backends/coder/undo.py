"""What a failed `create()` undoes: the `on_close` policy, applied to what sandlot did.

A workspace sandlot created gets `on_close`; one it only started (attach mode) is stopped again
when `on_close` is `stop` or `delete`, never deleted; one it found running is left alone.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Literal

from .cli import CoderCLI
from .lookup import find_workspace, settle
from .models import WhoAmI
from .options import CoderAttachOptions, CoderCreateOptions

log = logging.getLogger("sandlot.coder")


class Undo:
    """What create() must undo if it fails: the policy, applied to what sandlot did."""

    def __init__(self, cli: CoderCLI, opts: CoderCreateOptions | CoderAttachOptions,
                 me: WhoAmI) -> None:
        self.cli = cli
        self.opts = opts
        self.me = me
        self.reference = ""
        self._owner = ""
        self._name = ""
        self._action: Literal["delete", "stop", "leave", ""] = ""

    def created(self, reference: str, *, owner: str, name: str) -> None:
        self.reference, self._owner, self._name = reference, owner, name
        self._action = self.opts.on_close

    def started(self, reference: str, *, owner: str, name: str) -> None:
        # Attach mode: put it back as found (stopped), never delete someone's workspace.
        self.reference, self._owner, self._name = reference, owner, name
        self._action = "stop" if self.opts.on_close in ("stop", "delete") else ""

    def forget(self) -> None:
        self._action = ""

    async def apply(self, cause: BaseException) -> BaseException | None:
        """Apply the policy; return the cleanup's own error (None when it went well)."""
        action = self._action
        if not action or action == "leave":
            if action == "leave":
                _note(cause, f"on_close='leave': workspace {self.reference!r} was left as is")
            return None
        try:
            await settle(self.cli, self._owner, self._name, self.opts.build_timeout)
            workspace = await find_workspace(self.cli, owner=self._owner, name=self._name)
            if workspace is None:
                return None  # never came into being
            if action == "stop" and workspace.latest_build.transition != "start":
                return None  # already stopped (or deleted)
            await self.cli.lifecycle(action, self.reference, timeout=self.opts.build_timeout,
                                     sandbox=self.reference)
        except (Exception, asyncio.CancelledError) as exc:
            log.error("could not %s workspace %s after a failed create: %s", action,
                      self.reference, exc)
            return exc
        log.info("applied %s to workspace %s after a failed create", action, self.reference)
        _note(cause, f"sandlot applied {action!r} to workspace {self.reference!r}")
        return None


def _note(exc: BaseException, text: str) -> None:
    exc.add_note(text)


