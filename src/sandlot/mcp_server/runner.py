"""Run `sandlot mcp`: make the sandbox, put the workspaces in, serve MCP (stdio or streamable
HTTP), bring the commits back, close the sandbox; as server/runner.py runs `sandlot serve`.

The sandbox is closed (its provider's on_close applied) however the server ends: stdin closed
by the client, SIGTERM, SIGINT, or a failed start-up. Signals follow the one policy of
`sandlot._interrupts`: the first stops the server (uvicorn finishes its responses; stdio and
start-up are cancelled) and the commits still come back within their bound; a second gives the
bring-back up (or forces uvicorn down); the status is 128 + the first signal.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import uvicorn

from .._interrupts import Interrupts, name
from ..provider import IsolatedSandboxProvider
from ..sandbox import Sandbox
from ..secrets import Secret
from ..server.settings import ServerSettings
from ..tools import Toolbox
from .http import web_server
from .stdio import MAX_MESSAGE_BYTES, serve_stdio
from .tools import build_server


@dataclass
class McpOptions:
    """What `sandlot mcp` serves, already checked by the command (see commands/mcp_cmd.py)."""

    #: Workspace name to host directory, copied into the sandbox.
    copies: Mapping[str, str] = field(default_factory=dict)
    #: Workspace name to a directory already in the sandbox.
    roots: Mapping[str, str] = field(default_factory=dict)
    #: (workspace name, host repository) put into the sandbox with git, or None.
    repo: tuple[str, Path] | None = None
    #: With `repo`: the new branch the sandbox's commits come back as at shutdown.
    branch: str | None = None
    commit_uncommitted: str | None = None
    #: Seconds the bring-back may take before it gives up and says so.
    bring_back_timeout: float = 120.0
    readonly: bool = False
    #: Post-edit feedback after write and edit (adr/0049), and its budget in seconds.
    feedback: bool = True
    feedback_budget: float = 3.0
    #: Streamable HTTP with this binding; None: stdio.
    http: ServerSettings | None = None
    max_message_bytes: int = MAX_MESSAGE_BYTES
    progress_interval: float = 1.0
    #: Named secrets the agent may use by name (`secrets=[...]` on bash and verify tools).
    secrets: Mapping[str, Secret] = field(default_factory=dict)


class McpRunner:
    """One `sandlot mcp` process's life. `run()` returns the exit status."""

    def __init__(self, options: McpOptions, provider: IsolatedSandboxProvider,
                 say: Callable[[str], None]) -> None:
        self.options = options
        self.provider = provider
        self._say = say
        self._scope: anyio.CancelScope | None = None
        self._web: uvicorn.Server | None = None
        #: The bring-back's scope while it runs: a second signal cancels it.
        self._bringing_back: anyio.CancelScope | None = None
        self.interrupts = Interrupts(self._graceful, self._again)

    def _graceful(self, signum: int) -> None:
        if self._bringing_back is not None:
            self._say(f"{name(signum)}: shutting down once the commits are back (send it "
                      "again to give up)")
            return
        self._say(f"{name(signum)}: shutting down")
        self._stop()

    def _again(self, signum: int, _count: int) -> None:
        if self._bringing_back is not None:
            self._say(f"{name(signum)} again: giving up bringing the commits back; closing "
                      "the sandbox")
            self._bringing_back.cancel()
            return
        self._say(f"{name(signum)}: shutting down")
        if self._web is not None and self._web.started:
            self._web.force_exit = True  # uvicorn's own answer to a second Ctrl-C
        self._stop()

    def _stop(self) -> None:
        # uvicorn is asked to exit (it finishes its responses); anything else is cancelled.
        if self._web is not None and self._web.started:
            self._web.should_exit = True
        elif self._scope is not None:
            self._scope.cancel()

    async def run(self) -> int:
        """Serve until the client goes away or a signal; 0, or 128 + the first signal."""
        options = self.options
        with self.interrupts, anyio.CancelScope() as scope:
            self._scope = scope
            async with self.provider.session() as sandbox:
                box = await self._toolbox(sandbox)
                try:
                    async with box:
                        await self._serve(box)
                finally:
                    if options.repo is not None and options.branch:
                        await self._bring_back(sandbox, box.workspaces.resolve(options.repo[0]))
                    self._say(f"closing sandbox {sandbox.name}")
        return self.interrupts.exit_code or 0

    async def _serve(self, box: Toolbox) -> None:
        options = self.options
        sandbox = box.sandbox
        server = build_server(box, progress_interval=options.progress_interval,
                              instructions=instructions(box))
        where = ", ".join(f"{w.name}={w.root}" for w in box.workspaces)
        if options.http is None:
            self._say(f"serving MCP on stdio; sandbox {sandbox.name} ({sandbox.provider}); "
                      f"workspaces {where}")
            await serve_stdio(server, options.max_message_bytes)
            self._say("the client closed stdin")
            return
        self._web = web_server(server, options.http, lambda url: self._say(
            f"serving MCP on {url}; sandbox {sandbox.name}; workspaces {where}"))
        await self._web.serve()

    async def _toolbox(self, sandbox: Sandbox) -> Toolbox:
        """The workspaces assembled: host directories copied in, the repository pushed in,
        directories already in the sandbox named."""
        from .. import git
        from ..workspaces import WorkspaceSet, mount

        options = self.options
        spec: dict[str, str] = {}
        if options.copies:
            self._say(f"copying {', '.join(options.copies)} into the sandbox")
            spec.update({w.name: w.root for w in await mount(sandbox, options.copies)})
        if options.repo is not None:
            workspace, path = options.repo
            dest = posixpath.join(sandbox.worktree, workspace)
            checkout = await git.push_in(sandbox, repo=str(path), dest=dest)
            self._say(f"repository {path} at {checkout.path} on {checkout.branch} "
                      f"{checkout.commit[:12]}")
            spec[workspace] = checkout.path
        spec.update(options.roots)
        workspaces = WorkspaceSet(spec) if spec else None
        return Toolbox(sandbox, workspaces, readonly=options.readonly, secrets=options.secrets,
                       feedback=options.feedback, feedback_budget=options.feedback_budget)

    async def _bring_back(self, sandbox: Sandbox, dest: str) -> None:
        from .. import git
        from ..errors import SandlotError

        options = self.options
        assert options.repo is not None and options.branch is not None
        branch, bound = options.branch, options.bring_back_timeout
        self._say(f"bringing the commits back as {branch} (at most {bound:g}s; a second "
                  "SIGTERM or SIGINT gives up)")
        back = None
        try:
            # Shielded from the shutdown that got here, bounded, and cancelled by a second
            # signal.
            with anyio.CancelScope(shield=True, deadline=anyio.current_time() + bound) as scope:
                self._bringing_back = scope
                back = await git.pull_out(sandbox, repo=str(options.repo[1]), branch=branch,
                                          dest=dest,
                                          commit_uncommitted=options.commit_uncommitted,
                                          rescue=True, step_timeout=bound)
        except SandlotError as exc:
            self._say(f"could not bring the commits back as {branch}: {exc}")
            return
        finally:
            self._bringing_back = None
        if back is None:
            self._say(f"gave up bringing the commits back as {branch} (after at most "
                      f"{bound:g}s); they are lost with the sandbox unless its on_close keeps "
                      "it")
            return
        if back.branch is not None:
            self._say(f"{len(back.commits)} commit(s) came back as branch {back.branch} "
                      f"({back.head[:12]})")
        elif back.rescue_ref is not None:
            self._say(f"{len(back.commits)} commit(s) came back as {back.rescue_ref}")
        else:
            self._say("no new commits in the sandbox; no branch was written")
        for note in back.notes:
            self._say(f"note: {note}")


def instructions(box: Toolbox) -> str:
    """What the MCP client's model is told about the sandbox at initialize."""
    listing = ", ".join(f"{w.name} ({w.root})" for w in box.workspaces)
    many = len(box.workspaces) > 1
    return (
        f"The tools act in an isolated sandbox ({box.sandbox.provider} "
        f"{box.sandbox.name}). Workspaces: {listing}. "
        + ("Pass `workspace` to every call. " if many else "")
        + ("Read-only: only read, glob, grep, snapshot_list, snapshot_diff and code navigation "
           "(not rename_symbol) are offered. "
           if box.readonly else "")
        + (f"Secrets you can use by name (never by value): {', '.join(sorted(box.secrets))}; "
           "pass secrets=[...] to bash or a verify tool. " if box.secrets and not box.readonly
           else "")
        + "Paths are relative to the workspace root; read a file before you write or edit it."
    )
