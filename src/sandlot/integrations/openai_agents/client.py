"""`SandlotSandboxClient`: create, resume and delete sandlot-backed sandbox sessions.

`create` builds the provider from the options' configuration and makes a sandbox; the
session's state names it (see config.py). `resume` attaches to that same sandbox (a local
worktree, a Docker container, a Coder workspace by name); when it is gone it makes a new one
from the same configuration, and the SDK's `start()` hydrates it from the state's snapshot.
`delete` closes the sandbox, so its configured `on_close` applies (adr/0044).
"""

from __future__ import annotations

import uuid
from typing import Any

from agents.sandbox.manifest import Manifest
from agents.sandbox.session.dependencies import Dependencies
from agents.sandbox.session.manager import Instrumentation
from agents.sandbox.session.sandbox_client import BaseSandboxClient
from agents.sandbox.session.sandbox_session import SandboxSession
from agents.sandbox.session.sandbox_session_state import SandboxSessionState
from agents.sandbox.snapshot import SnapshotBase, SnapshotSpec, resolve_snapshot

from ...config import provider_from_config
from ...errors import BackendUnavailableError, ConfigurationError, SandboxStartError
from ...sandbox import Sandbox
from .config import (
    SECRET_FIELDS,
    SandlotSandboxClientOptions,
    SandlotSandboxSessionState,
    attach_config,
    sandbox_ref,
    with_secrets,
)
from .session import SandlotSandboxSession

#: The SDK's default manifest root: a session whose manifest keeps it works in the sandbox's
#: own worktree instead (and follows it to a new sandbox on resume).
_DEFAULT_ROOT = Manifest.model_fields["root"].default


class SandlotSandboxClient(BaseSandboxClient[SandlotSandboxClientOptions]):
    """Sandbox sessions on sandlot providers, for the OpenAI Agents SDK's sandbox agents.

        client = SandlotSandboxClient()
        options = SandlotSandboxClientOptions(provider={"type": "docker", "image": "python:3.12",
                                                        "on_close": "delete"})
        result = await Runner.run(agent, "...", run_config=RunConfig(
            sandbox=SandboxRunConfig(client=client, options=options)))

    `session_token` is the Coder token for coder configurations (else the environment's /
    the CLI's login, as for `sandlot`); it is never written to options or state.
    """

    backend_id = "sandlot"

    def __init__(self, *, instrumentation: Instrumentation | None = None,
                 dependencies: Dependencies | None = None,
                 session_token: str | None = None) -> None:
        self._instrumentation = instrumentation if instrumentation is not None else (
            Instrumentation())
        self._dependencies = dependencies
        self._session_token = session_token

    def __repr__(self) -> str:
        return "<SandlotSandboxClient>"  # the token, if any, stays out

    async def _make(self, config: dict[str, Any]) -> Sandbox:
        return await provider_from_config(with_secrets(config, self._session_token)).create()

    async def create(self, *, snapshot: SnapshotSpec | SnapshotBase | None = None,
                     manifest: Manifest | None = None,
                     options: SandlotSandboxClientOptions) -> SandboxSession:
        if not isinstance(options, SandlotSandboxClientOptions):
            raise ConfigurationError(
                "SandlotSandboxClient.create needs SandlotSandboxClientOptions(provider={...})")
        manifest = manifest if manifest is not None else Manifest()
        self._validate_manifest_for_create(manifest)
        config = {k: v for k, v in options.provider.items() if k not in SECRET_FIELDS}
        sandbox = await self._make(config)
        try:
            root_is_worktree = manifest.root == _DEFAULT_ROOT
            if root_is_worktree:
                manifest = manifest.model_copy(update={"root": sandbox.worktree}, deep=True)
            session_id = uuid.uuid4()
            state = SandlotSandboxSessionState(
                session_id=session_id, manifest=manifest,
                snapshot=resolve_snapshot(snapshot, str(session_id)),
                exposed_ports=options.exposed_ports, provider=config,
                backend=sandbox.provider, sandbox_ref=sandbox_ref(sandbox),
                worktree=sandbox.worktree, root_is_worktree=root_is_worktree)
        except BaseException:
            await sandbox.close()  # no session will own it: its on_close applies now
            raise
        inner = SandlotSandboxSession(state=state, sandbox=sandbox)
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    async def delete(self, session: SandboxSession) -> SandboxSession:
        inner = session._inner
        if not isinstance(inner, SandlotSandboxSession):
            raise TypeError("SandlotSandboxClient.delete expects a session it made")
        await inner.close_sandbox()
        return session

    async def resume(self, state: SandboxSessionState) -> SandboxSession:
        if not isinstance(state, SandlotSandboxSessionState):
            raise TypeError("SandlotSandboxClient.resume expects a SandlotSandboxSessionState "
                            "(from SandlotSandboxClient.deserialize_session_state)")
        state.assert_path_grants_rebound()
        attach = attach_config(state.provider, state.backend, state.sandbox_ref, state.worktree)
        try:
            sandbox = await self._make(attach)
            reattached = True
        except BackendUnavailableError:
            raise  # the engine or deployment is down: a new sandbox would fail the same way
        except (ConfigurationError, SandboxStartError):
            # The sandbox is gone (deleted worktree, removed container, deleted workspace):
            # make a new one like it; start() restores the snapshot into it.
            sandbox = await self._make(state.provider)
            reattached = False
        if not reattached:
            state.sandbox_ref = sandbox_ref(sandbox)
            state.worktree = sandbox.worktree
            state.workspace_root_ready = False
            if state.root_is_worktree:
                state.manifest = state.manifest.model_copy(update={"root": sandbox.worktree},
                                                           deep=True)
        inner = SandlotSandboxSession(state=state, sandbox=sandbox)
        inner._set_start_state_preserved(reattached, system=reattached)
        return self._wrap_session(inner, instrumentation=self._instrumentation)

    def deserialize_session_state(self, payload: dict[str, object]) -> SandboxSessionState:
        return self._deserialize_session_state_payload(payload, SandlotSandboxSessionState)
