"""The `IsolatedSandboxProvider` interface: something that makes sandboxes."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from . import telemetry
from .sandbox import Sandbox


class IsolatedSandboxProvider(ABC):
    """Creates sandboxes of one kind ("local", "docker", "coder")."""

    name: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every backend's create() is one `sandlot.create` span, whoever calls it.
        super().__init_subclass__(**kwargs)
        create = cls.__dict__.get("create")
        if create is not None and not getattr(create, "__isabstractmethod__", False):
            cls.create = _traced_create(create)  # type: ignore[method-assign,assignment]

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


def _traced_create(
    create: Callable[[Any], Awaitable[Sandbox]],
) -> Callable[[Any], Awaitable[Sandbox]]:
    if getattr(create, "_sandlot_traced", False):
        return create

    @functools.wraps(create)
    async def traced(self: IsolatedSandboxProvider) -> Sandbox:
        attributes = {"sandlot.sandbox.provider": self.name}
        with telemetry.span("sandlot.create", attributes) as current:
            sandbox = await create(self)
            telemetry.set_attributes(current, {"sandlot.sandbox.name": sandbox.name})
            return sandbox

    traced._sandlot_traced = True  # type: ignore[attr-defined]
    return traced
