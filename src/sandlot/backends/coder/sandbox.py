"""A sandbox in one agent of a Coder workspace: commands are channels on one SSH connection."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio.abc
import asyncssh

from ... import _shell
from ...errors import CleanupError, ProviderError, SandboxGoneError
from ...sandbox import InteractiveSpec, RunningCommand, Sandbox, SpawnSpec
from ...secrets import reveal
from .cli import CoderCLI, remove_autostop_lock
from .lookup import find_workspace
from .models import Agent, Workspace
from .options import CoderAttachOptions, CoderCreateOptions
from .ssh import SSHConnection, splice_ssh

log = logging.getLogger("sandlot.coder")


class CoderSandbox(Sandbox):
    """A sandbox in one agent of a Coder workspace, over one SSH connection."""

    def __init__(
        self,
        *,
        worktree: str,
        workspace: Workspace,
        agent: Agent,
        connection: SSHConnection,
        cli: CoderCLI,
        options: CoderCreateOptions | CoderAttachOptions,
        ready: Callable[[Workspace], Awaitable[object]],
    ) -> None:
        super().__init__(provider="coder", worktree=worktree, name=workspace.reference)
        #: `owner/name`: what lifecycle commands are given (never `<ws>.<agent>`).
        self.workspace = workspace.reference
        self.workspace_id = workspace.id
        self.secrets.add_env(options.env)
        self.workspace_name = workspace.name
        self.owner = workspace.owner_name
        self.agent = agent.name
        self.on_close = options.on_close
        self._connection = connection
        self._cli = cli
        self._options = options
        #: Waits until a (re)started workspace's agent is connected and ready (the
        #: provider's readiness poll; resume() needs it).
        self._ready = ready
        self._session_helper = options.session_helper

    @property
    def connection(self) -> SSHConnection:
        """The one SSH connection every command of this sandbox is a channel on."""
        return self._connection

    def _can_sweep(self) -> bool:
        return self._connection.connected

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        return {**reveal(self._options.env), **env}

    async def _before_spawn(self) -> None:
        await self._connection.ensure()

    async def _spawn(self, spec: SpawnSpec) -> RunningCommand:
        spec.env = self._env(spec.env)
        return await self._connection.spawn(spec)

    async def _interactive(self, spec: InteractiveSpec) -> int:
        line = _shell.render(spec.argv, cwd=spec.cwd, env=self._env(spec.env))
        return await self._connection.interactive(
            line, stdin=spec.stdin, stdout=spec.stdout, stderr=spec.stderr, tty=spec.tty
        )

    async def _forward_preflight(self) -> None:
        await self._connection.ensure()  # direct-tcpip needs no program in the workspace

    async def _forward_connection(
        self, client: anyio.abc.ByteStream, remote_host: str, remote_port: int
    ) -> None:
        # A direct-tcpip channel on the sandbox's one SSH connection (the agent connects to
        # the port); after a dropped connection, `ensure()` gives the new one.
        connection = await self._connection.ensure()
        try:
            reader, writer = await connection.open_connection(remote_host, remote_port)
        except (asyncssh.ChannelOpenError, OSError):
            return  # nothing listens there: the caller closes the connection
        await splice_ssh(client, reader, writer)

    def _close_ends_durable(self) -> bool:
        # Deleting or stopping a workspace ends its processes on a real template; an agent
        # that runs on a shared host (as the fake deployment's do) would leave them running.
        return self.on_close != "leave"

    async def _pause(self) -> None:
        # A stopped workspace keeps its disk (the home volume); its processes end.
        await self._connection.suspend()
        await self._cli.lifecycle("stop", self.workspace, timeout=self._options.build_timeout,
                                  sandbox=self.workspace)

    async def _resume(self) -> None:
        await self._cli.lifecycle("start", self.workspace, timeout=self._options.build_timeout,
                                  sandbox=self.workspace)
        found = await find_workspace(self._cli, owner=self.owner, name=self.workspace_name)
        if found is None:
            raise SandboxGoneError(f"workspace {self.workspace!r} disappeared while it was "
                                   "started again", provider="coder", sandbox=self.workspace)
        await self._ready(found)
        await self._connection.ensure()

    async def _close(self) -> None:
        await self._connection.close()
        action = self.on_close
        if action == "leave":
            log.info("left Coder workspace %s as it is (on_close='leave')", self.workspace)
            return
        try:
            await self._cli.lifecycle(action, self.workspace,
                                      timeout=self._options.build_timeout,
                                      sandbox=self.workspace)
        except ProviderError as exc:
            raise CleanupError(
                f"on_close={action!r} failed for workspace {self.workspace!r}: {exc}; it may "
                f"still be running: run `coder {action} {self.workspace} --yes`",
                provider="coder", sandbox=self.workspace,
            ) from exc
        if action == "delete":
            remove_autostop_lock(self.workspace_id, self._cli.child_env())
        log.info("applied on_close=%r to Coder workspace %s", action, self.workspace)

