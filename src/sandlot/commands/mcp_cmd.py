"""`sandlot mcp`: the toolbox of one sandbox as an MCP server, over stdio or streamable HTTP.

The sandbox is created at start-up and closed (its provider's on_close applied) however the
server ends: stdin closed by the client, SIGTERM, SIGINT, or a failed start-up. Everything
this command says goes to stderr: on stdio, stdout is the protocol's channel.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import posixpath
import re
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
                        "workspace (git round trip); a path that exists is always read as a "
                        "path, even with '=' in it")
    parser.add_argument("--branch", help="with --repo: at shutdown, bring the commits made in "
                        "the sandbox back as this new branch of the repository")
    parser.add_argument("--branch-suffix", choices=["auto"],
                        help="with --branch: 'auto' appends -<UTC time> (e.g. "
                        "sandlot/agent-1-20250101T120000Z) so every launch of the same "
                        "configuration gets a new branch")
    parser.add_argument("--bring-back-timeout", type=float, default=120.0, metavar="SECONDS",
                        help="with --branch: seconds the shutdown may spend bringing the "
                        "commits back before it gives up and says so (default 120)")
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
    """(workspace name, path). A value that exists as a path is that path, '=' or not; only
    otherwise is NAME=PATH split off (the path part must then exist)."""
    if value is None:
        return None
    name, sep, path = value.partition("=")
    if Path(value).exists() or not sep or not Path(path).is_dir() or not name.strip():
        # The workspace is named after the directory, with what a name may not hold replaced.
        named = re.sub(r"[^A-Za-z0-9_.-]+", "-", Path(value).resolve().name).strip("-.")
        return named or "repo", Path(value)
    return name.strip(), Path(path)


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
    from ..errors import SandlotError

    try:
        copies, roots, repo = await _check_inputs(args)
    except SandlotError as exc:
        if args.http:
            raise
        # An MCP client shows the user its initialize failure, not a closed pipe's.
        print(f"sandlot: error: {exc}", file=sys.stderr, flush=True)
        _refuse_initialize(str(exc))
        return 1
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
            await group.start(_watch_signals, stop)
            try:
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
                            await _bring_back(sandbox, repo[1],
                                              box.workspaces.resolve(repo[0]), args.branch,
                                              args.commit_uncommitted, stop,
                                              args.bring_back_timeout)
                        _say(f"closing sandbox {sandbox.name}")
            finally:
                stop.end_watch()
            group.cancel_scope.cancel()
    return 128 + stop.signal if stop.signal else 0


async def _check_inputs(
    args: argparse.Namespace,
) -> tuple[dict[str, str], dict[str, str], tuple[str, Path] | None]:
    """Every refusal that depends only on the inputs, before a sandbox exists. With
    --branch-suffix auto, `args.branch` becomes the fresh branch name."""
    copies = _pairs(args.workspace, "--workspace")
    roots = _pairs(args.root, "--root")
    repo = _repo(args.repo)
    if args.branch and repo is None:
        raise ConfigurationError("--branch needs --repo (the repository the branch goes to)")
    if args.branch_suffix and not args.branch:
        raise ConfigurationError("--branch-suffix needs --branch (the name it is appended to)")
    if not args.bring_back_timeout > 0:
        raise ConfigurationError("--bring-back-timeout must be a positive number of seconds")
    for name, host in copies.items():
        if not Path(host).is_dir():
            raise WorkspaceError(f"--workspace {name}={host}: no such host directory")
    if repo is not None:
        from ..git.host import toplevel

        await toplevel(repo[1])
        if args.branch:  # before the agent works, not after
            if args.branch_suffix == "auto":
                args.branch = await _fresh_branch(repo[1], args.branch)
            await _check_branch(repo[1], args.branch)
    return copies, roots, repo


async def _fresh_branch(repo: Path, branch: str) -> str:
    """`branch-<UTC time>`, with -2, -3, ... when a launch in the same second took it."""
    import time

    from ..git.host import branch_exists, toplevel

    root = await toplevel(repo)
    stamp = f"{branch}-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}"
    for attempt in range(1, 100):
        name = stamp if attempt == 1 else f"{stamp}-{attempt}"
        if not await branch_exists(root, name):
            return name
    return f"{stamp}-{os.getpid()}"


def _refuse_initialize(message: str, wait: float = 30.0) -> None:
    """Answer the client's `initialize` request (read from stdin within `wait` seconds) with
    a JSON-RPC error carrying `message`, so the client shows why the server cannot start."""
    import json
    import select
    import time

    if os.isatty(0):  # a person at a terminal reads the error on stderr
        return
    deadline = time.monotonic() + wait
    buffered = b""
    while time.monotonic() < deadline:
        try:
            ready, _, _ = select.select([0], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(0, 65536) if ready else b""
        except (OSError, ValueError):
            return
        if not chunk:
            return
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if isinstance(request, dict) and request.get("method") == "initialize" \
                    and "id" in request:
                answer = {"jsonrpc": "2.0", "id": request["id"],
                          "error": {"code": -32603, "message": f"sandlot mcp: {message}"}}
                with contextlib.suppress(OSError):
                    os.write(1, json.dumps(answer).encode() + b"\n")
                return


class _Stop:
    """How a signal ends the server: uvicorn is asked to exit (it finishes its responses);
    anything else (start-up, stdio) is cancelled."""

    def __init__(self) -> None:
        self.scope: anyio.CancelScope | None = None
        self.web: Any = None
        self.signal = 0
        self.count = 0
        self.watcher: anyio.CancelScope | None = None
        #: The bring-back's scope while it runs: a second signal cancels it.
        self.bringing_back: anyio.CancelScope | None = None

    def __call__(self, signum: int) -> None:
        self.count += 1
        self.signal = signum
        if self.bringing_back is not None:
            if self.count > 1:
                _say(f"{signal.Signals(signum).name} again: giving up bringing the commits "
                     "back; closing the sandbox")
                self.bringing_back.cancel()
            else:
                _say(f"{signal.Signals(signum).name}: shutting down once the commits are back "
                     "(send it again to give up)")
            return
        _say(f"{signal.Signals(signum).name}: shutting down")
        if self.web is not None and self.web.started:
            self.web.should_exit = True
        elif self.scope is not None:
            self.scope.cancel()

    def end_watch(self) -> None:
        if self.watcher is not None:
            self.watcher.cancel()


async def _watch_signals(stop: _Stop, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    # Shielded: the first signal cancels the server, and the watcher must outlive it to hear
    # a second one during the bring-back; end_watch() ends it.
    with anyio.CancelScope(shield=True) as own:
        stop.watcher = own
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            task_status.started()
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
    from ..git.roundtrip import check_target

    try:
        await check_target(str(repo), branch)
    except BranchExistsError as exc:
        raise BranchExistsError(f"{exc}; or pass --branch-suffix auto for a new branch each "
                                "launch") from None


async def _bring_back(sandbox: Any, repo: Path, dest: str, branch: str,
                      commit_uncommitted: str | None, stop: _Stop, bound: float) -> None:
    from .. import git
    from ..errors import SandlotError

    _say(f"bringing the commits back as {branch} (at most {bound:g}s; a second SIGTERM or "
         "SIGINT gives up)")
    back = None
    try:
        # Shielded from the shutdown that got here, bounded, and cancelled by a second signal.
        with anyio.CancelScope(shield=True, deadline=anyio.current_time() + bound) as scope:
            stop.bringing_back = scope
            back = await git.pull_out(sandbox, repo=str(repo), branch=branch, dest=dest,
                                      commit_uncommitted=commit_uncommitted, rescue=True,
                                      step_timeout=bound)
    except SandlotError as exc:
        _say(f"could not bring the commits back as {branch}: {exc}")
        return
    finally:
        stop.bringing_back = None
    if back is None:
        _say(f"gave up bringing the commits back as {branch} (after at most {bound:g}s); they "
             "are lost with the sandbox unless its on_close keeps it")
        return
    if back.branch is not None:
        _say(f"{len(back.commits)} commit(s) came back as branch {back.branch} "
             f"({back.head[:12]})")
    elif back.rescue_ref is not None:
        _say(f"{len(back.commits)} commit(s) came back as {back.rescue_ref}")
    else:
        _say("no new commits in the sandbox; no branch was written")
    for note in back.notes:
        _say(f"note: {note}")
