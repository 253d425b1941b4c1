"""The coder backend's flows: preflight, create or attach, wait for the agent, connect, close.

    whoami preflight -> `coder create` (or resolve + `coder start`) -> poll `coder list` until
    the agent is connected and ready -> SSH round trip until it answers (tenacity) -> keep that
    ONE connection; every command is a channel on it -> close(): `on_close`, exactly.

Whatever fails (or is cancelled) after sandlot created a workspace leaves it as `on_close`
says before the error propagates; a workspace sandlot only attached to is put back as it was
found (stopped again if sandlot started it), never deleted because of a failure.
"""

from __future__ import annotations

import asyncio
import logging
import os
import posixpath
import time
import weakref
from dataclasses import dataclass

import anyio
from tenacity import (
    AsyncRetrying,
    RetryError,
    retry_if_exception,
    stop_after_delay,
    wait_exponential,
)

from ... import _shell, telemetry
from ...errors import (
    CleanupError,
    CoderAgentError,
    CoderAgentSelectionError,
    CoderBuildFailedError,
    CoderCLIError,
    CoderNotLoggedInError,
    CoderWorkspaceNotFoundError,
    ConnectionLostError,
    HostPathNotFoundError,
    SandboxStartError,
    join_errors,
)
from ...provider import IsolatedSandboxProvider
from .cli import CoderCLI, last_error_line
from .lookup import POLL_FIRST, POLL_MAX, find_workspace, resolve_workspace, settle
from .models import (
    AGENT_CONNECTED,
    BUILD_RUNNING,
    LIFECYCLE_READY,
    LIFECYCLE_SHUTTING_DOWN,
    LIFECYCLE_START_ERROR,
    LIFECYCLE_START_TIMEOUT,
    Agent,
    WhoAmI,
    Workspace,
)
from .options import CoderAttachOptions, CoderCreateOptions, default_workspace_name
from .retry import retrying
from .sandbox import CoderSandbox
from .ssh import ProxyCommand, SSHConnectError, SSHConnection, SSHOptions
from .undo import Undo

log = logging.getLogger("sandlot.coder")

#: Seconds one provider reuses its preflight (`coder whoami`) for further creates.
PREFLIGHT_REUSE = 60.0

#: The worktree, relative to the agent's directory (or $HOME).
WORKTREE_SUFFIX = ".sandlot/worktree"

# The SSH probe: one round trip that also reports $HOME and whether the shell the agent
# starts leads its own process group (what `kill -- -<pid>` needs). Lines are marked so
# banners or profile output before them do not matter.
_PROBE_MARK = "sandlot-probe"
_PROBE = (
    f"printf '{_PROBE_MARK} home=%s\\n' \"$HOME\"; "
    "if read -r s < /proc/$$/stat 2>/dev/null; then s=${s##*) }; set -- $s; "
    f"if [ \"$3\" = \"$$\" ]; then echo '{_PROBE_MARK} leader=yes'; "
    f"else echo '{_PROBE_MARK} leader=no'; fi; fi; "
    f"command -v setsid >/dev/null 2>&1 && echo '{_PROBE_MARK} setsid=yes'; "
    f"echo '{_PROBE_MARK} ok'"
)
# What the proxy prints when retrying cannot help.
_FATAL_PROXY = (
    "You are not logged in",
    "signed out or your session has expired",
    "Resource not found",
    "agent not found by name",
    "has no agents",
    "is deleted",
    "failed state",
    "workspace must be started",
)


@dataclass
class _Probe:
    home: str
    leader: bool
    setsid: bool


class _ProbeFailed(Exception):
    """The round trip ran but did not answer as expected (retried)."""


class CoderProvider(IsolatedSandboxProvider):
    """Makes sandboxes in Coder workspaces through the `coder` CLI (see module docstring)."""

    name = "coder"

    def __init__(self, options: CoderCreateOptions | CoderAttachOptions) -> None:
        self.options = options
        self._shared_cli: CoderCLI | None = None
        # The preflight's answer, shared by the creates of one provider for a while: a
        # fan-out of N sandboxes asks the deployment who we are once, not N times.
        self._preflight: tuple[WhoAmI, float] | None = None
        # One lock per event loop: a provider may outlive a loop (asyncio.run twice).
        self._preflight_locks: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Lock
        ] = weakref.WeakKeyDictionary()

    async def _whoami(self, cli: CoderCLI) -> WhoAmI:
        lock = self._preflight_locks.setdefault(asyncio.get_running_loop(), asyncio.Lock())
        async with lock:
            cached = self._preflight
            if cached is not None and time.monotonic() - cached[1] < PREFLIGHT_REUSE:
                return cached[0]
            me = await cli.whoami()
            self._preflight = (me, time.monotonic())
            return me

    def __repr__(self) -> str:
        return f"CoderProvider({self.options!r})"

    def _cli(self) -> CoderCLI:
        # One CLI per provider: the sandboxes of a fan-out share its `coder list` calls.
        if self._shared_cli is None:
            opts = self.options
            self._shared_cli = CoderCLI(
                opts.coder_binary,
                url=opts.coder_url,
                token=opts.session_token,
                transient_retry_timeout=opts.transient_retry_timeout,
            )
        return self._shared_cli

    async def create(self) -> CoderSandbox:
        opts = self.options
        parameter_file = getattr(opts, "parameter_file", None)
        if parameter_file is not None and not os.path.isfile(parameter_file):
            raise HostPathNotFoundError(
                f"parameter_file {parameter_file!r} is not a file; give the path of a YAML "
                "file of parameter values"
            )
        cli = self._cli()
        cli.path  # noqa: B018 -- a missing binary fails here, before anything else
        me = await self._whoami(cli)
        log.debug("coder preflight: logged in as %s at %s", me.username, me.url or cli.url)
        undo = Undo(cli, opts, me)
        try:
            if isinstance(opts, CoderCreateOptions):
                workspace = await self._create_workspace(cli, opts, me, undo)
            else:
                workspace = await self._attach_workspace(cli, opts, me, undo)
            attributes = {"sandlot.sandbox.provider": "coder",
                          "sandlot.sandbox.name": workspace.reference}
            with telemetry.span("sandlot.coder.wait_ready", attributes):
                workspace, agent = await self._wait_for_agent(cli, workspace)
            with telemetry.span("sandlot.coder.connect", {**attributes,
                                                          "sandlot.coder.agent": agent.name}):
                return await self._connect(cli, workspace, agent)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                cleanup_error = await undo.apply(exc)
            if cleanup_error is not None and not isinstance(exc, asyncio.CancelledError):
                raise CleanupError(
                    join_errors([exc, cleanup_error])
                    + f"; check `coder list` for {undo.reference!r}",
                    provider="coder",
                    sandbox=undo.reference,
                ) from exc
            raise

    # ---- create / attach --------------------------------------------------------------------

    async def _create_workspace(
        self, cli: CoderCLI, opts: CoderCreateOptions, me: WhoAmI, undo: Undo
    ) -> Workspace:
        name = opts.workspace_name or default_workspace_name()
        if await find_workspace(cli, owner=me.username, name=name) is not None:
            # Never adopt (let alone clean up) a workspace sandlot did not create.
            raise CoderCLIError(
                f"a workspace named {name!r} already exists for {me.username!r}; choose "
                f"another workspace_name=, or attach to it with workspace={name!r}",
                sandbox=name,
            )
        args = ["create", name, "--template", opts.template]
        if opts.template_version is not None:
            args += ["--template-version", opts.template_version]
        args += opts.parameter_flags()
        if opts.parameter_file is not None:
            args += ["--rich-parameter-file", opts.parameter_file]
        if opts.preset is not None:
            args += ["--preset", opts.preset]
        if opts.organization is not None:
            args += ["--org", opts.organization]
        if opts.use_parameter_defaults:
            args.append("--use-parameter-defaults")
        args.append("--yes")
        log.info("creating Coder workspace %s/%s from template %s", me.username, name,
                 opts.template)
        undo.created(f"{me.username}/{name}", owner=me.username, name=name)
        attempts = 0

        async def create_once() -> None:
            nonlocal attempts
            attempts += 1
            await cli.run(*args, timeout=opts.build_timeout, sandbox=name)

        try:
            await retrying(
                f"coder create {name}", create_once, url=cli.url,
                timeout=opts.transient_retry_timeout,
            )
        except CoderCLIError as exc:
            found = await find_workspace(cli, owner=me.username, name=name)
            # The name was free before the first attempt, so after a retry "already exists"
            # means an earlier attempt reached the server: the workspace is ours.
            ours = attempts > 1 and found is not None
            if found is None or ("already exists" in exc.stderr and not ours):
                undo.forget()  # not ours, or never reached the server: nothing to clean up
                raise
            if found.build_failed:
                raise _build_failed(found, "coder create", exc) from exc
            if not ours:
                raise
            log.info("an earlier attempt created workspace %s; using it", found.reference)
        workspace = await find_workspace(cli, owner=me.username, name=name)
        if workspace is None:
            raise SandboxStartError(
                f"`coder create {name}` succeeded but the workspace is not in `coder list`",
                provider="coder", sandbox=name,
            )
        return workspace

    async def _attach_workspace(
        self, cli: CoderCLI, opts: CoderAttachOptions, me: WhoAmI, undo: Undo
    ) -> Workspace:
        workspace = await resolve_workspace(cli, opts, me)
        reference = workspace.reference
        if workspace.build_in_progress:
            log.info("workspace %s has a %s build in progress; waiting for it to finish",
                     reference, workspace.latest_build.transition)
            await settle(cli, workspace.owner_name, workspace.name, opts.build_timeout)
            found = await find_workspace(cli, owner=workspace.owner_name, name=workspace.name)
            if found is None:
                raise CoderWorkspaceNotFoundError(
                    f"workspace {reference!r} was deleted while sandlot waited for its build",
                    sandbox=reference,
                )
            workspace = found
        build = workspace.latest_build
        if build.transition == "start" and build.status == BUILD_RUNNING:
            return workspace
        if build.transition == "delete":
            raise CoderWorkspaceNotFoundError(
                f"workspace {reference!r} is {build.status}; attach to another one",
                sandbox=reference,
            )
        log.info("starting Coder workspace %s (it is %s)", reference, build.status)
        undo.started(reference, owner=workspace.owner_name, name=workspace.name)
        try:
            await cli.lifecycle("start", reference, timeout=opts.build_timeout, sandbox=reference)
        except CoderCLIError as exc:
            found = await find_workspace(cli, owner=workspace.owner_name, name=workspace.name)
            if found is not None and found.build_failed:
                raise _build_failed(found, "coder start", exc) from exc
            raise
        found = await find_workspace(cli, owner=workspace.owner_name, name=workspace.name)
        if found is None:
            raise CoderWorkspaceNotFoundError(
                f"workspace {reference!r} disappeared while it was being started",
                sandbox=reference,
            )
        return found

    # ---- readiness ----------------------------------------------------------------------

    async def _wait_for_agent(
        self, cli: CoderCLI, workspace: Workspace
    ) -> tuple[Workspace, Agent]:
        """Poll `coder list` until the chosen agent is connected and ready (or fail fast)."""
        opts = self.options
        reference = workspace.reference
        deadline = time.monotonic() + opts.ready_timeout
        delay = POLL_FIRST
        last = "no agent reported yet"
        while True:
            build = workspace.latest_build
            if workspace.build_failed:
                raise _build_failed(workspace, "the workspace build", None)
            if build.transition != "start":
                raise SandboxStartError(
                    f"workspace {reference!r} is {build.status} (its latest build is a "
                    f"{build.transition}): someone stopped or deleted it while sandlot waited",
                    provider="coder", sandbox=reference,
                )
            if build.status == BUILD_RUNNING and workspace.agents:
                agent = _select_agent(workspace, opts.agent)
                if agent.operating_system == "windows":
                    raise CoderAgentError(
                        f"agent {agent.name!r} of workspace {reference!r} runs Windows; sandlot "
                        "needs a POSIX shell (sh) in the workspace",
                        agent=agent.name, status=agent.status,
                        lifecycle_state=agent.lifecycle_state, sandbox=reference,
                    )
                state = agent.lifecycle_state
                last = f"agent {agent.name!r}: status={agent.status}, lifecycle_state={state}"
                if state in LIFECYCLE_SHUTTING_DOWN:
                    raise CoderAgentError(
                        f"agent {agent.name!r} of workspace {reference!r} is shutting down "
                        f"(lifecycle_state={state}); restart the workspace and try again",
                        agent=agent.name, status=agent.status, lifecycle_state=state,
                        sandbox=reference,
                    )
                if state == LIFECYCLE_START_ERROR:
                    raise CoderAgentError(
                        f"agent {agent.name!r} of workspace {reference!r} failed to start "
                        f"(lifecycle_state=start_error: a startup script exited with an "
                        f"error); see the agent logs in the Coder dashboard"
                        + (f" ({agent.troubleshooting_url})" if agent.troubleshooting_url
                           else ""),
                        agent=agent.name, status=agent.status, lifecycle_state=state,
                        sandbox=reference,
                    )
                if agent.status == AGENT_CONNECTED:
                    if state == LIFECYCLE_READY:
                        return workspace, agent
                    if state == LIFECYCLE_START_TIMEOUT:
                        # Like `coder ssh`: warn, and use the workspace anyway.
                        log.warning(
                            "agent %r of workspace %r: a startup script timed out "
                            "(lifecycle_state=start_timeout); the workspace may be "
                            "incomplete, continuing", agent.name, reference,
                        )
                        return workspace, agent
            elif build.status != BUILD_RUNNING:
                last = f"workspace build is {build.status}"
            else:
                last = "the build finished but no agent is reported yet"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CoderAgentError(
                    f"workspace {reference!r} was not ready within {opts.ready_timeout:g}s "
                    f"({last}); raise ready_timeout= if startup is slow, or check the agent "
                    "in the Coder dashboard",
                    agent=opts.agent or "", sandbox=reference,
                )
            await anyio.sleep(min(delay, remaining))
            delay = min(delay * 1.5, POLL_MAX)
            with telemetry.span("sandlot.coder.poll", {"sandlot.coder.waiting_for": last}):
                found = await find_workspace(cli, owner=workspace.owner_name,
                                             name=workspace.name)
            if found is None:
                raise CoderWorkspaceNotFoundError(
                    f"workspace {reference!r} disappeared while sandlot waited for it",
                    sandbox=reference,
                )
            workspace = found

    # ---- connecting ---------------------------------------------------------------------

    async def _connect(self, cli: CoderCLI, workspace: Workspace, agent: Agent) -> CoderSandbox:
        opts = self.options
        target = f"{workspace.reference}.{agent.name}"
        connection = SSHConnection(
            ProxyCommand(cli.ssh_stdio_argv(target), env=cli.child_env(), label=target),
            SSHOptions(
                username="coder",
                connect_timeout=opts.connect_timeout,
                keepalive_interval=opts.keepalive_interval,
                keepalive_count_max=opts.keepalive_count_max,
                provider="coder",
                sandbox=workspace.reference,
            ),
        )
        try:
            probe = await self._probe(connection, target)
            connection.group_kill = probe.leader
            connection.wrap_setsid = not probe.leader and probe.setsid
            if not await connection.check_exit_signals():
                log.debug("%s reports no exit signals; commands run in a subshell", target)
            if not probe.leader:
                log.warning("commands on %s do not lead a process group%s", target,
                            "; wrapping them in setsid" if probe.setsid else
                            " and setsid is missing: a timeout ends only the command itself")
            worktree = _worktree(opts.workdir, agent, probe.home, target)
            code, _, err = await connection.run(
                f"mkdir -p -- {_shell.quote(worktree)}", timeout=opts.connect_timeout
            )
            if code != 0:
                raise SandboxStartError(
                    f"cannot create the worktree {worktree!r} in {target}: "
                    f"{err.decode(errors='replace').strip() or f'exit {code}'}; pick a "
                    "writable workdir=",
                    provider="coder", sandbox=workspace.reference,
                )
        except BaseException:
            with anyio.CancelScope(shield=True):
                await connection.close()
            raise
        log.info("connected to Coder workspace %s (agent %s), worktree %s",
                 workspace.reference, agent.name, worktree)
        return CoderSandbox(
            worktree=worktree,
            workspace=workspace,
            agent=agent,
            connection=connection,
            cli=cli,
            options=opts,
        )

    async def _probe(self, connection: SSHConnection, target: str) -> _Probe:
        """SSH round trips until one answers: a claimed prebuild may first route to an agent
        that is shutting down, and an agent may take a moment to accept connections."""
        opts = self.options
        attempts = 0

        async def once() -> _Probe:
            nonlocal attempts
            attempts += 1
            await connection.connect()
            code, out, err = await connection.run(_PROBE, timeout=opts.connect_timeout)
            return _parse_probe(code, out, err)

        probe: _Probe | None = None
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_delay(opts.ssh_ready_timeout),
                wait=wait_exponential(multiplier=0.2, max=2.0),
                retry=retry_if_exception(_retry_probe),
            ):
                with attempt:
                    probe = await once()
        except RetryError as exc:
            last = exc.last_attempt.exception()
            raise CoderAgentError(
                f"SSH to {target} did not answer within {opts.ssh_ready_timeout:g}s "
                f"({attempts} attempts); last error: {last}",
                agent=target.rpartition(".")[2], sandbox=target.rpartition(".")[0],
            ) from last
        except SSHConnectError as exc:
            raise _fatal_proxy_error(exc, target) from None
        assert probe is not None
        if attempts > 1:
            log.info("ssh to %s answered after %d attempts", target, attempts)
        return probe


def _parse_probe(code: int, out: bytes, err: bytes) -> _Probe:
    fields: dict[str, str] = {}
    for raw in out.decode(errors="replace").splitlines():
        line = raw.strip()
        if line.startswith(_PROBE_MARK + " "):
            key, _, value = line[len(_PROBE_MARK) + 1 :].partition("=")
            fields[key] = value
    if code != 0 or "ok" not in fields:
        raise _ProbeFailed(
            f"probe exited {code} without its answer: {err.decode(errors='replace')[-300:]!r}"
        )
    return _Probe(
        home=fields.get("home", ""),
        leader=fields.get("leader", "yes") == "yes",
        setsid=fields.get("setsid") == "yes",
    )


def _retry_probe(exc: BaseException) -> bool:
    if isinstance(exc, SSHConnectError):
        return not any(text in exc.proxy_stderr for text in _FATAL_PROXY)
    return isinstance(exc, _ProbeFailed | ConnectionLostError | TimeoutError)


def _fatal_proxy_error(exc: SSHConnectError, target: str) -> Exception:
    stderr = exc.proxy_stderr
    reason = last_error_line(stderr) or str(exc)
    if "not logged in" in stderr or "signed out" in stderr:
        return CoderNotLoggedInError(
            f"`coder ssh --stdio {target}`: not logged in ({reason}); run `coder login <url>` "
            "or pass coder_url= and session_token=",
            provider="coder", sandbox=target,
        )
    if any(t in stderr for t in ("Resource not found", "is deleted", "must be started")):
        return CoderWorkspaceNotFoundError(
            f"`coder ssh --stdio {target}`: the workspace is gone ({reason})",
            stderr=stderr, sandbox=target,
        )
    return CoderAgentError(f"`coder ssh --stdio {target}` failed: {reason}",
                           agent=target.rpartition(".")[2], sandbox=target)


def _worktree(workdir: str | None, agent: Agent, home: str, target: str) -> str:
    if workdir is not None:
        return workdir
    base = agent.expanded_directory or agent.directory
    if base.startswith("~"):
        base = home + base[1:] if home else ""
    elif base.startswith("$HOME"):
        base = home + base[5:] if home else ""
    elif base and not base.startswith("/"):
        base = posixpath.join(home, base) if home else ""
    if not base:
        base = home
    if not base.startswith("/"):
        raise SandboxStartError(
            f"cannot choose a worktree in {target}: the agent reports no absolute directory "
            f"and $HOME is {home!r}; pass workdir='/absolute/path'",
            provider="coder", sandbox=target,
        )
    return posixpath.join(posixpath.normpath(base), WORKTREE_SUFFIX)


def _select_agent(workspace: Workspace, wanted: str | None) -> Agent:
    agents = workspace.agents
    names = [a.name for a in agents]
    if wanted is not None:
        for agent in agents:
            if agent.name == wanted:
                return agent
        raise CoderAgentSelectionError(
            f"workspace {workspace.reference!r} has no agent named {wanted!r}; its agents: "
            f"{', '.join(names)}",
            available=names,
        )
    if len(agents) > 1:
        raise CoderAgentSelectionError(
            f"workspace {workspace.reference!r} has {len(agents)} agents "
            f"({', '.join(names)}); choose one with agent='<name>'",
            available=names,
        )
    return agents[0]


def _build_failed(
    workspace: Workspace, what: str, cause: CoderCLIError | None
) -> CoderBuildFailedError:
    build = workspace.latest_build
    job_error = build.job.error
    return CoderBuildFailedError(
        f"{what} failed: the {build.transition} build of workspace {workspace.reference!r} is "
        f"{build.status}" + (f": {job_error}" if job_error else "")
        + "; see the build log in the Coder dashboard",
        job_error=job_error,
        argv=cause.argv if cause else None,
        exit_code=cause.exit_code if cause else None,
        stderr=cause.stderr if cause else "",
        sandbox=workspace.reference,
    )


