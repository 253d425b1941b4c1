"""`sandlot mcp`: the toolbox of one sandbox as an MCP server, over stdio or streamable HTTP.

The sandbox is created at start-up and closed (its provider's on_close applied) however the
server ends: stdin closed by the client, SIGTERM, SIGINT, or a failed start-up. Everything
this command says goes to stderr: on stdio, stdout is the protocol's channel.
"""

from __future__ import annotations

import argparse
import os
import posixpath
import signal
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio

from ..cli import add_provider_arguments, provider_from_args
from ..errors import ConfigurationError, WorkspaceError
from .serve import add_origin_arguments


def register(subparsers: Any) -> None:
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "mcp",
        help="serve a sandbox's tools to an MCP client (stdio, or --http) (needs sandlot[mcp])",
        description="Create a sandbox and offer its tools (read, write, edit, glob, grep, "
        "bash, the verify tools, run_code) to a Model Context Protocol client: over stdio "
        "(the default, what an agent launches) or streamable HTTP (--http). The sandbox is "
        "closed as the provider's on_close says when the client goes away or on "
        "SIGTERM/SIGINT. Binding anything but loopback requires a bearer token in "
        "$SANDLOT_TOKEN.",
        epilog="examples:\n"
        "  sandlot mcp --workspace app=./my-app\n"
        "  sandlot mcp --repo . --branch sandlot/agent-1\n"
        "  sandlot mcp --provider docker --provider-config '{\"image\": \"python:3.12\", "
        '"on_close": "delete"}\' --http --port 8765\n',
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_provider_arguments(parser)
    parser.add_argument("--workspace", action="append", default=[], metavar="NAME=HOSTPATH",
                        help="copy a host directory into the sandbox as workspace NAME "
                        "(repeatable)")
    parser.add_argument("--root", action="append", default=[], metavar="NAME=SANDBOXPATH",
                        help="a directory already in the sandbox as workspace NAME (repeatable)")
    parser.add_argument("--repo", metavar="[NAME=]PATH",
                        help="put this host git repository's HEAD into the sandbox as a "
                        "workspace (git round trip)")
    parser.add_argument("--branch", help="with --repo: at shutdown, bring the commits made in "
                        "the sandbox back as this new branch of the repository")
    parser.add_argument("--commit-uncommitted", metavar="MESSAGE",
                        help="with --branch: commit what the agent left uncommitted first")
    parser.add_argument("--readonly", action="store_true",
                        help="offer only the tools that change nothing (read, glob, grep)")
    parser.add_argument("--http", action="store_true",
                        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="with --http: address to bind")
    parser.add_argument("--port", type=int, default=8765,
                        help="with --http: port (0: any free port; default 8765)")
    add_origin_arguments(parser)
    parser.add_argument("--max-message-bytes", type=int, default=64 << 20, metavar="BYTES",
                        help="on stdio: longest JSON-RPC message; a longer one is discarded "
                        "and answered with an error (default 64 MiB)")
    parser.add_argument("--progress-interval", type=float, default=1.0,
                        help="seconds between progress notifications of a long call")
    parser.set_defaults(handler=run, own_signals=True)


def _say(text: str) -> None:
    print(f"sandlot mcp: {text}", file=sys.stderr, flush=True)


def _pairs(values: list[str], flag: str) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise WorkspaceError(f"{flag} {value!r}: write it as NAME=PATH")
        if name in pairs:
            raise WorkspaceError(f"{flag}: workspace name {name!r} is given twice")
        pairs[name.strip()] = path.strip()
    return pairs


def _repo(value: str | None) -> tuple[str, Path] | None:
    if value is None:
        return None
    name, sep, path = value.partition("=")
    if not sep:
        path = value
        name = Path(value).resolve().name or "repo"
    return name, Path(path)


def _binding(args: argparse.Namespace) -> Any:
    """The HTTP binding, checked by the same rules (and code) as `sandlot serve`."""
    from pydantic import SecretStr

    from ..server.settings import TOKEN_ENV, ServerSettings

    token = os.environ.get(TOKEN_ENV) or None
    settings = ServerSettings(host=args.host, port=args.port,
                              token=SecretStr(token) if token else None,
                              allowed_hosts=args.allowed_host,
                              allowed_origins=args.allowed_origin)
    settings.check_binding()
    return settings


async def run(args: argparse.Namespace) -> int:
    copies = _pairs(args.workspace, "--workspace")
    roots = _pairs(args.root, "--root")
    repo = _repo(args.repo)
    if args.branch and repo is None:
        raise ConfigurationError("--branch needs --repo (the repository the branch goes to)")
    for name, host in copies.items():
        if not Path(host).is_dir():
            raise WorkspaceError(f"--workspace {name}={host}: no such host directory")
    if repo is not None and args.branch:
        await _check_branch(repo[1], args.branch)  # before the agent works, not after
    settings = _binding(args) if args.http else None
    if args.max_message_bytes <= 0:
        raise ConfigurationError("--max-message-bytes must be a positive number of bytes")
    if args.progress_interval <= 0:
        raise ConfigurationError("--progress-interval must be a positive number of seconds")
    try:
        from ..mcp_server import build_server
    except ImportError as exc:
        _say(f"needs the mcp extra ({exc.name} is missing): pip install 'sandlot[mcp]'")
        return 2
    provider = provider_from_args(args)
    _say(f"creating a {provider.name} sandbox")
    stop = _Stop()
    with anyio.CancelScope() as scope:
        stop.scope = scope
        async with anyio.create_task_group() as group:
            group.start_soon(_watch_signals, stop)
            async with provider.session() as sandbox:
                box = await _toolbox(sandbox, copies, roots, repo, args.readonly)
                try:
                    async with box:
                        server = build_server(box, progress_interval=args.progress_interval,
                                              instructions=_instructions(box))
                        where = ", ".join(f"{w.name}={w.root}" for w in box.workspaces)
                        if settings is None:
                            _say(f"serving MCP on stdio; sandbox {sandbox.name} "
                                 f"({sandbox.provider}); workspaces {where}")
                            await _serve_stdio(server, args.max_message_bytes)
                        else:
                            await _serve_http(server, settings, sandbox.name, where, stop)
                finally:
                    if repo is not None and args.branch:
                        await _bring_back(sandbox, repo[1], box.workspaces.resolve(repo[0]),
                                          args.branch, args.commit_uncommitted)
                    _say(f"closing sandbox {sandbox.name}")
            group.cancel_scope.cancel()
    return 128 + stop.signal if stop.signal else 0


class _Stop:
    """How a signal ends the server: uvicorn is asked to exit (it finishes its responses);
    anything else (start-up, stdio) is cancelled."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.web: Any = None
        self.signal = 0

    def __call__(self, signum: int) -> None:
        self.signal = signum
        _say(f"{signal.Signals(signum).name}: shutting down")
        if self.web is not None and self.web.started:
            self.web.should_exit = True
        elif self.scope is not None:
            self.scope.cancel()


async def _watch_signals(stop: _Stop) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            stop(signum)


async def _toolbox(sandbox: Any, copies: Mapping[str, str], roots: Mapping[str, str],
                   repo: tuple[str, Path] | None, readonly: bool) -> Any:
    from .. import git
    from ..tools import Toolbox
    from ..workspaces import WorkspaceSet, mount

    spec: dict[str, str] = {}
    if copies:
        _say(f"copying {', '.join(copies)} into the sandbox")
        spec.update({w.name: w.root for w in await mount(sandbox, copies)})
    if repo is not None:
        name, path = repo
        dest = posixpath.join(sandbox.worktree, name)
        checkout = await git.push_in(sandbox, repo=str(path), dest=dest)
        _say(f"repository {path} at {checkout.path} on {checkout.branch} "
             f"{checkout.commit[:12]}")
        spec[name] = checkout.path
    spec.update(roots)
    workspaces = WorkspaceSet(spec) if spec else None
    return Toolbox(sandbox, workspaces, readonly=readonly)


def _instructions(box: Any) -> str:
    listing = ", ".join(f"{w.name} ({w.root})" for w in box.workspaces)
    many = len(box.workspaces) > 1
    return (
        f"The tools act in an isolated sandbox ({box.sandbox.provider} "
        f"{box.sandbox.name}). Workspaces: {listing}. "
        + ("Pass `workspace` to every call. " if many else "")
        + ("Read-only: only read, glob and grep are offered. " if box.readonly else "")
        + "Paths are relative to the workspace root; read a file before you write or edit it."
    )


async def _serve_stdio(server: Any, max_message_bytes: int) -> None:
    from ..mcp_server.stdio import serve_stdio

    await serve_stdio(server, max_message_bytes)
    _say("the client closed stdin")


async def _serve_http(server: Any, settings: Any, name: str, where: str, stop: _Stop) -> None:
    from ..mcp_server.http import web_server

    web = web_server(server, settings, lambda url: _say(
        f"serving MCP on {url}; sandbox {name}; workspaces {where}"))
    stop.web = web
    await web.serve()


async def _check_branch(repo: Path, branch: str) -> None:
    from ..errors import BranchExistsError
    from ..git.host import branch_exists, toplevel

    root = await toplevel(repo)
    if await branch_exists(root, branch):
        raise BranchExistsError(f"branch {branch!r} already exists in {root}; choose another "
                                "name for the agent's commits")


async def _bring_back(sandbox: Any, repo: Path, dest: str, branch: str,
                      commit_uncommitted: str | None) -> None:
    from .. import git
    from ..errors import SandlotError

    try:
        with anyio.CancelScope(shield=True):
            back = await git.pull_out(sandbox, repo=str(repo), branch=branch, dest=dest,
                                      commit_uncommitted=commit_uncommitted)
    except SandlotError as exc:
        _say(f"could not bring the commits back as {branch}: {exc}")
        return
    if back.branch is None:
        _say("no new commits in the sandbox; no branch was written")
    else:
        _say(f"{len(back.commits)} commit(s) came back as branch {back.branch} "
             f"({back.head[:12]})")
    for note in back.notes:
        _say(f"note: {note}")
