"""One language server for one workspace root: started, initialized, kept in sync, watched.

The session answers the requests every server sends its client (progress tokens,
configuration, capability registrations), keeps the documents it opened in step with the
files (a full-text didChange when a file changed on disk), tracks `$/progress` so a caller
can wait for indexing to end (bounded, and visibly: each progress message goes to
`on_progress`), and keeps the diagnostics the server publishes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import posixpath
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote, urlparse

import anyio

from ..errors import LanguageServerNotInstalledError, LanguageServerTimeoutError
from ..sandbox import Sandbox
from ..verify.detector import Detector
from .rpc import Connection

#: What the client tells every server it can do: plain-text sync, progress, the answers it
#: reads (hover as markdown or text, hierarchical symbols, prepareRename).
CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "window": {"workDoneProgress": True},
    "workspace": {
        "configuration": True,
        "workspaceFolders": True,
        "applyEdit": False,
        "workspaceEdit": {"documentChanges": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "symbol": {"dynamicRegistration": False},
    },
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "didSave": True},
        "hover": {"contentFormat": ["markdown", "plaintext"]},
        "definition": {"linkSupport": False},
        "references": {},
        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
        "rename": {"prepareSupport": True},
        "publishDiagnostics": {"relatedInformation": False, "versionSupport": True},
    },
    # rust-analyzer says when it is done loading (quiescent) only to a client asking for it.
    "experimental": {"serverStatusNotification": True},
}


#: A log line saying the server has found the workspace's files, for servers that answer
#: before they have: pyright answered a first find_references with the declaration alone, and
#: logged "Found 5 source files" just after. Requests wait for it (at most READY_GRACE s after
#: the start, in case a version words it otherwise).
READY_LOGS: dict[str, re.Pattern[str]] = {"python": re.compile(r"^Found \d+ source files?")}
READY_GRACE = 60.0


# Both cached: every warm call turns the same few paths and URIs into each other, and
# urllib's quoting and parsing was a twentieth of the host's work in it.
@functools.lru_cache(maxsize=4096)
def file_uri(path: str) -> str:
    return "file://" + quote(path, safe="/")


@functools.lru_cache(maxsize=4096)
def uri_path(uri: str) -> str | None:
    """The absolute path of a file: URI (None for any other scheme)."""
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return None
    return unquote(parsed.path)


@dataclass
class Document:
    """A file the server has open: the text it was given and its version."""

    text: str
    version: int
    synced: float = field(default_factory=time.monotonic)
    """When the server was last given this text (diagnostics published since are its own)."""


@dataclass
class Progress:
    """What the server is busy with: its open progress tokens and the last message."""

    active: dict[str, str] = field(default_factory=dict)
    last: str = ""
    quiescent: bool | None = None  # rust-analyzer's serverStatus; None: never said
    begun: int = 0
    """How many progress tokens ever began (a request can tell one began while it ran)."""


class LanguageServer:
    """The server of `detector`'s language over `root` in `sandbox`."""

    def __init__(self, sandbox: Sandbox, detector: Detector, root: str, *,
                 env: Mapping[str, str], on_progress: Callable[[str], None] | None,
                 argv: Sequence[str] | None = None) -> None:
        self.sandbox = sandbox
        self.detector = detector
        self.argv = list(argv or detector.lsp_command)
        default = self.argv == list(detector.lsp_command)
        self.ready_log = READY_LOGS.get(detector.language) if default else None
        self.ready_seen = False
        self.language = detector.language
        self.root = root
        self.env = dict(env)
        self.on_progress = on_progress
        self.binary = posixpath.basename(self.argv[0])
        self.name = f"{self.binary} ({detector.language}) at {root}"
        self.documents: dict[str, Document] = {}
        self.diagnostics: dict[str, tuple[int | None, float, list[dict[str, Any]]]] = {}
        self.capabilities: dict[str, Any] = {}
        self.progress = Progress()
        self.started = time.monotonic()
        #: Whether it has answered once: later calls get `request_timeout`, not the indexing
        #: budget, and may ask while the file is read.
        self.warm = False
        self.connection: Connection | None = None
        self._changed = asyncio.Event()

    # ---- life ---------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.connection is not None and not self.connection.dead

    async def start(self, timeout: float) -> None:
        """Check the server is installed, start it and run the initialize handshake."""
        binary = self.argv[0]
        found = await self.sandbox.exec(["sh", "-c", 'command -v "$1"', "sh", binary],
                                        cwd=self.root, env=self.env, timeout=60)
        if found.exit_code != 0:
            raise LanguageServerNotInstalledError(
                f"{binary}, the {self.language} language server, is not installed in the "
                f"sandbox (not on PATH); {self.detector.lsp_install}", binary=binary)
        self.started = time.monotonic()
        self.connection = Connection(
            self.sandbox, self.argv, cwd=self.root, env=self.env,
            name=self.name, on_notify=self._on_notify, on_request=self._on_request)
        await self.connection.start()
        folder = {"uri": file_uri(self.root), "name": self.root.rsplit("/", 1)[-1] or "root"}
        try:
            result = await self.connection.request("initialize", {
                "processId": None,
                "clientInfo": {"name": "sandlot"},
                "rootUri": folder["uri"],
                "rootPath": self.root,
                "workspaceFolders": [folder],
                "capabilities": CAPABILITIES,
                "initializationOptions": {},
            }, timeout=timeout)
        except TimeoutError:
            await self.stop()
            raise LanguageServerTimeoutError(
                f"{self.name} did not answer initialize within {timeout:g}s; raise "
                "index_timeout if the project is large") from None
        self.capabilities = dict((result or {}).get("capabilities") or {})
        await self.connection.notify("initialized", {})

    async def stop(self) -> None:
        """Ask politely (shutdown, exit), then end its process tree."""
        connection = self.connection
        if connection is None:
            return
        if not connection.dead:
            with contextlib.suppress(Exception), anyio.move_on_after(2):
                await connection.request("shutdown", None, timeout=2)
                await connection.notify("exit", None)
        await connection.kill()

    # ---- what the server sends ------------------------------------------------------------

    def _on_notify(self, method: str, params: Any) -> None:
        if method == "$/progress" and isinstance(params, dict):
            self._on_progress(params)
        elif method == "textDocument/publishDiagnostics" and isinstance(params, dict):
            uri = str(params.get("uri", ""))
            version = params.get("version")
            items = [d for d in params.get("diagnostics") or [] if isinstance(d, dict)]
            self.diagnostics[uri] = (version if isinstance(version, int) else None,
                                     time.monotonic(), items)
        elif method == "window/logMessage" and isinstance(params, dict):
            if self.ready_log is None or self.ready_seen:
                return
            if not self.ready_log.search(str(params.get("message", ""))):
                return
            self.ready_seen = True
        elif method == "experimental/serverStatus" and isinstance(params, dict):
            self.progress.quiescent = bool(params.get("quiescent"))
            if params.get("message"):
                self._say(str(params["message"]))
        else:
            return
        self._changed.set()

    def _on_progress(self, params: dict[str, Any]) -> None:
        token = str(params.get("token"))
        value = params.get("value")
        if not isinstance(value, dict):
            return
        kind = value.get("kind")
        if kind == "begin":
            title = str(value.get("title", ""))[:200]
            self.progress.active[token] = title
            self.progress.begun += 1
            self._say(" ".join(p for p in (title, str(value.get("message", ""))) if p))
        elif kind == "report" and token in self.progress.active:
            message = str(value.get("message", ""))[:200]
            percent = value.get("percentage")
            suffix = f" ({percent}%)" if isinstance(percent, int) else ""
            self._say(f"{self.progress.active[token]} {message}{suffix}".strip())
        elif kind == "end":
            self.progress.active.pop(token, None)

    def _say(self, message: str) -> None:
        message = message.strip()[:300]
        if not message:
            return
        self.progress.last = message
        if self.on_progress is not None:
            with contextlib.suppress(Exception):
                self.on_progress(f"{self.binary}: {message}")

    async def _on_request(self, method: str, params: Any) -> Any:
        if method in ("window/workDoneProgress/create", "client/registerCapability",
                      "client/unregisterCapability", "window/showMessageRequest",
                      "workspace/codeLens/refresh", "workspace/semanticTokens/refresh",
                      "workspace/inlayHint/refresh", "workspace/diagnostic/refresh"):
            return None
        if method == "workspace/configuration":
            items = (params or {}).get("items") or []
            return [None for _ in items]
        if method == "workspace/workspaceFolders":
            return [{"uri": file_uri(self.root), "name": self.root.rsplit("/", 1)[-1]}]
        if method == "workspace/applyEdit":
            # Edits are applied by the client from a rename's answer (through the race-free
            # file tools), never on the server's own initiative.
            return {"applied": False, "failureReason": "this client applies edits itself"}
        raise LookupError(method)

    # ---- waiting ----------------------------------------------------------------------------

    def busy(self) -> str | None:
        """What the server is still indexing (None: nothing we know of)."""
        if self.progress.active:
            return "; ".join(t for t in self.progress.active.values() if t) or "indexing"
        if self.progress.quiescent is False:
            return self.progress.last or "loading the workspace"
        if (self.ready_log is not None and not self.ready_seen
                and time.monotonic() - self.started < READY_GRACE):
            return "finding the workspace's source files"
        return None

    async def settle(self, deadline: float, timeout: float) -> None:
        """Wait until no indexing is in progress, at the latest until `deadline`."""
        while (what := self.busy()) is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LanguageServerTimeoutError(
                    f"{self.name} is still indexing after {timeout:g}s ({what}; last "
                    f"message: {self.progress.last or 'none'}); call again later, or raise "
                    "index_timeout")
            self._changed.clear()
            with anyio.move_on_after(min(left, 1.0)):
                await self._changed.wait()
            if self.connection is not None and self.connection.dead:
                raise self.connection.crash_error()

    async def wait_diagnostics(self, uri: str, since: float, version: int,
                               deadline: float, quiet: float = 1.0) -> list[dict[str, Any]]:
        """The diagnostics of `uri` published after `since` (for `version` where the server
        says which): the last set once none came for `quiet` s, or by `deadline`."""
        while True:
            entry = self.diagnostics.get(uri)
            fresh = entry is not None and entry[1] >= since and entry[0] in (None, version)
            now = time.monotonic()
            # Not while the server is busy: a check it runs on save (rust-analyzer's cargo
            # check) publishes after the quick set of its own diagnostics.
            if entry is not None and fresh and now - entry[1] >= quiet and self.busy() is None:
                return entry[2]
            if now >= deadline:
                if entry is not None and fresh:
                    return entry[2]
                raise LanguageServerTimeoutError(
                    f"{self.name} published no diagnostics for {uri_path(uri)} in time; "
                    "call again, or raise request_timeout")
            self._changed.clear()
            with anyio.move_on_after(min(quiet, max(deadline - now, 0.01))):
                await self._changed.wait()
            if self.connection is not None and self.connection.dead:
                raise self.connection.crash_error()

    # ---- documents --------------------------------------------------------------------------

    async def sync(self, path: str, text: str) -> Document:
        """Make the server's copy of `path` equal `text` (open it, or send the new text)."""
        assert self.connection is not None
        uri = file_uri(path)
        doc = self.documents.get(uri)
        if doc is None:
            ext = "." + path.rsplit(".", 1)[-1] if "." in path.rsplit("/", 1)[-1] else ""
            language_id = self.detector.lsp_extensions.get(ext, self.language)
            doc = Document(text=text, version=1)
            await self.connection.notify("textDocument/didOpen", {"textDocument": {
                "uri": uri, "languageId": language_id, "version": 1, "text": text}})
            self.documents[uri] = doc
        elif doc.text != text:
            doc.version += 1
            doc.text, doc.synced = text, time.monotonic()
            await self.connection.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": doc.version},
                "contentChanges": [{"text": text}]})
        return doc

    async def saved(self, path: str) -> None:
        """Say `path` was saved, to a server that asks for saves: rust-analyzer runs cargo
        check on a save, and only that finds what rustc finds (type errors among them)."""
        sync = self.capabilities.get("textDocumentSync")
        # `"save": {}` asks for saves too (rust-analyzer's answer): only absent or false don't.
        if self.connection is None or not isinstance(sync, dict) or sync.get("save") in (None,
                                                                                        False):
            return
        await self.connection.notify("textDocument/didSave",
                                     {"textDocument": {"uri": file_uri(path)}})

    async def files_changed(self, paths: list[str]) -> None:
        """Tell the server files changed on disk (after a rename applied its edit)."""
        if self.connection is None or self.connection.dead or not paths:
            return
        await self.connection.notify("workspace/didChangeWatchedFiles", {
            "changes": [{"uri": file_uri(p), "type": 2} for p in paths]})
