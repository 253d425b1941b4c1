"""The `IsolatedSandboxProvider` interface: something that makes sandboxes."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from .sandbox import Sandbox


class IsolatedSandboxProvider(ABC):
    """Creates sandboxes of one kind ("local", "docker", "coder")."""

    name: str

    @abstractmethod
    async def create(self) -> Sandbox:
        """Make a new sandbox, ready for commands.

        If creation fails (or is cancelled) after some resource existed, the provider releases
        it according to its `on_close` policy before the error propagates.
        """

    @asynccontextmanager
    async def session(self) -> AsyncIterator[Sandbox]:
        """`create()`, then always `close()`: on success, on error and on cancellation.

        sandlot never closes sandboxes from a destructor; this context manager (or an explicit
        `close()`) is how a sandbox ends.
        """
        sandbox = await self.create()
        try:
            yield sandbox
        finally:
            with anyio.CancelScope(shield=True):
                await sandbox.close()
