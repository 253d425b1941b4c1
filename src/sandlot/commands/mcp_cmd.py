"""`sandlot mcp`: the toolbox of one sandbox as an MCP server, over stdio or streamable HTTP.

This module reads and checks the command line (every refusal before a sandbox exists);
mcp_server/runner.py runs the server. Everything this command says goes to stderr: on stdio,
stdout is the protocol's channel.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path
from typing import Any

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
    parser.add_argument("--secret", action="append", default=[],
                        metavar="NAME[=ENVVAR|=@FILE]",
                        help="a secret the agent may use by name (bash/verify tools' "
                        "secrets=[NAME]; the secret_env tool lists them): its value from the "
                        "host variable ENVVAR (default NAME) or a file, never from argv; every "
                        "tool result shows [secret:NAME] instead of it (repeatable)")
    parser.add_argument("--readonly", action="store_true",
                        help="offer only the tools that change nothing (read, glob, grep, "
                        "snapshot_list, snapshot_diff, code navigation)")
    parser.add_argument("--no-feedback", dest="feedback", action="store_false",
                        help="do not run the changed file's format and lint checks after "
                        "write and edit")
    parser.add_argument("--feedback-budget", type=float, default=3.0, metavar="SECONDS",
                        help="seconds those checks may take per edit; a check still running "
                        "then is stopped and noted (default 3)")
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


def _secrets(args: argparse.Namespace) -> dict[str, Any]:
    """--secret values, read from the host environment or files (refused before a sandbox)."""
    from .._shell import validate_env
    from ..secrets import secrets_from_specs

    secrets = secrets_from_specs(args.secret, "--secret")
    validate_env({name: "" for name in secrets})  # each name is the command's variable
    return secrets


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
        secrets = _secrets(args)
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
    if not 0 < args.feedback_budget <= 3600:
        raise ConfigurationError("--feedback-budget must be a number of seconds above 0 and at "
                                 "most 3600")
    try:
        from ..mcp_server.runner import McpOptions, McpRunner
    except ImportError as exc:
        _say(f"needs the mcp extra ({exc.name} is missing): pip install 'sandlot[mcp]'")
        return 2
    options = McpOptions(
        copies=copies, roots=roots, repo=repo, branch=args.branch,
        commit_uncommitted=args.commit_uncommitted,
        bring_back_timeout=args.bring_back_timeout, readonly=args.readonly, http=settings,
        feedback=args.feedback, feedback_budget=args.feedback_budget,
        max_message_bytes=args.max_message_bytes, progress_interval=args.progress_interval,
        secrets=secrets,
    )  # fmt: skip
    provider = provider_from_args(args)
    _say(f"creating a {provider.name} sandbox")
    return await McpRunner(options, provider, _say).run()


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
    """Answer the client's opening requests (read from stdin within `wait` seconds) with a
    JSON-RPC error carrying `message`, so the client shows why the server cannot start.

    Every request is answered, not only `initialize`: a client of the 2026 protocol opens with
    `server/discover` and waits 10 s for its answer before it falls back to `initialize`."""
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
            if not isinstance(request, dict) or "id" not in request \
                    or not isinstance(request.get("method"), str):
                continue  # a notification or a reply: nothing to answer
            answer = {"jsonrpc": "2.0", "id": request["id"],
                      "error": {"code": -32603, "message": f"sandlot mcp: {message}"}}
            try:
                os.write(1, json.dumps(answer).encode() + b"\n")
            except OSError:
                return
            if request["method"] == "initialize":
                return


async def _check_branch(repo: Path, branch: str) -> None:
    from ..errors import BranchExistsError
    from ..git.roundtrip import check_target

    try:
        await check_target(str(repo), branch)
    except BranchExistsError as exc:
        raise BranchExistsError(f"{exc}; or pass --branch-suffix auto for a new branch each "
                                "launch") from None
