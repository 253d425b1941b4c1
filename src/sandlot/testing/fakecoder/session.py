"""Who is calling: the invocation context and coder's client initialisation (InitClient).

cli/root.go InitClient: the deployment URL comes from ``--url``/``CODER_URL``, else from the
``url`` file of the config directory (``--global-config``/``CODER_CONFIG_DIR``, default
``$XDG_CONFIG_HOME/coderv2`` or ``~/.config/coderv2``); no URL at all is "not logged in". The token
comes from ``--token``/``CODER_SESSION_TOKEN``, else the ``session`` file; a missing token is not an
error on the client, the server answers 401 (coderd/httpmw/apikey.go). A URL that is not this
deployment's behaves like an unreachable server: ``Get "<url>/api/v2/...": dial tcp ...`` (Go's
url.Error, unwrapped: tests/fixtures/coder-cli/whoami-bad-url.json, list-bad-url.json).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from urllib.parse import quote, urlsplit

from . import state, transient
from .errors import NOT_LOGGED_IN_FORMAT, CLIError, unauthorized

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TextIO

    from .args import Parsed


class Invocation:
    """One run of the fake CLI: where the state is, the parsed command line, the streams."""

    def __init__(self, root: Path, command: str, parsed: Parsed, env: dict[str, str]) -> None:
        self.root = root
        self.command = command
        self.parsed = parsed
        self.env = env
        self.stdin: Any = sys.stdin
        self.stdout: TextIO = sys.stdout
        self.stderr: TextIO = sys.stderr
        self.binary = "coder"


class Client:
    """An authenticated caller: the state as loaded, the user, and the URL as they gave it."""

    def __init__(self, st: state.State, user: dict[str, Any], url: str) -> None:
        self.st = st
        self.user = user
        self.url = url


def default_config_dir(env: dict[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "coderv2"


def config_dir(inv: Invocation) -> Path:
    given = inv.parsed.text("global_config")
    return Path(given).expanduser() if given else default_config_dir(inv.env)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None


def normalize_url(url: str) -> str:
    parts = urlsplit(url.strip())
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"


def unreachable(url: str, api_path: str) -> CLIError:
    """The error Go's HTTP client gives for a URL where no coderd answers."""
    parts = urlsplit(url.strip())
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    target = url.strip().rstrip("/") + api_path
    import ipaddress

    try:
        ipaddress.ip_address(host)
        is_ip = True
    except ValueError:
        is_ip = host == "localhost"
    if is_ip:
        hostport = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        reason = f"dial tcp {hostport}: connect: connection refused"
    else:
        reason = f"dial tcp: lookup {host}: no such host"
    return CLIError(f'Get "{target}": {reason}')


def init_client(inv: Invocation, api_path: str, wrap: str = "") -> Client:
    """Authenticate like coder's InitClient + the command's first API request (`api_path`).

    `wrap` is the prefix the command puts on that request's error (e.g. ``query workspaces``).
    """
    try:
        return _init_client(inv, api_path)
    except CLIError as exc:
        if wrap and not exc.message.startswith("You are not logged in"):
            raise exc.wrap(wrap) from None
        raise


def _init_client(inv: Invocation, api_path: str) -> Client:
    url = inv.parsed.text("url")
    conf = config_dir(inv)
    if not url:
        stored = _read(conf / "url")
        if stored is None:
            raise CLIError(NOT_LOGGED_IN_FORMAT.format(binary=inv.binary))
        url = stored
    token = inv.parsed.text("token") or _read(conf / "session") or ""
    st = state.load(inv.root)
    if normalize_url(url) != normalize_url(st["url"]):
        raise unreachable(url, api_path)
    if not token:
        raise unauthorized('Cookie "coder_session_token" or query parameter must be provided.')
    user_id = st["sessions"].get(token)
    if user_id is None:
        raise unauthorized("API key is invalid.")
    user = next(u for u in st["users"] if u["id"] == user_id)
    transient.maybe_fail(inv, st, url, api_path)
    return Client(st=st, user=user, url=url.strip())


def query_path(base: str, query: str) -> str:
    return f"{base}?q={quote(query, safe='')}" if query else base


def binary_path() -> str:
    """What Go's os.Executable() would give for the launcher."""
    return str(Path(sys.argv[0]).resolve()) if sys.argv and sys.argv[0] else "coder"


def environ() -> dict[str, str]:
    return dict(os.environ)
