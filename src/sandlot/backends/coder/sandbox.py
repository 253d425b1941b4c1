"""A sandbox in one agent of a Coder workspace: commands are channels on one SSH connection."""

from __future__ import annotations

import logging

import anyio.abc
import asyncssh

from ... import _shell
from ...errors import CleanupError, ProviderError
from ...sandbox import InteractiveSpec, RunningCommand, Sandbox, SpawnSpec
from ...secrets import reveal
from .cli import CoderCLI
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
        log.info("applied on_close=%r to Coder workspace %s", action, self.workspace)

