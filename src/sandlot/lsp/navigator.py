"""`LanguageServers`: code navigation over a sandbox's workspaces, one server per workspace
root and language, started on first use, reused, restarted when it died.

A file goes to the server of its extension (each detector names the extensions it owns), so
a Go service and a TypeScript frontend in one workspace each get their own server. Files are
read and written through the toolbox's race-free file tools: contained in their workspace,
and a rename writes a file only if it still holds the text the server was given.
"""

from __future__ import annotations

import asyncio
import functools
import posixpath
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ..errors import (
    LanguageServerCrashedError,
    LanguageServerTimeoutError,
    NoLanguageServerError,
    NotReadError,
    PathOutsideWorkspaceError,
    ToolError,
)
from ..sandbox import Sandbox
from ..verify.detector import Detector, _registry, detectors_for, normalize_language, probe
from ..workspaces import Workspace, WorkspaceSet
from . import positions
from .cache import TextCache
from .files import read_many
from .models import (
    SEVERITIES,
    SYMBOL_KINDS,
    Diagnostic,
    FileChange,
    Hover,
    Location,
    Rename,
    Span,
    Symbol,
    TextChange,
)
from .server import Document, LanguageServer, file_uri, uri_path

if TYPE_CHECKING:
    from ..tools import ReadTracker, Toolbox

A = TypeVar("A")
B = TypeVar("B")


#: A location's fields: (outside the workspace, path shown, line, column, end line, end
#: column, the line's text), in the order answers are sorted by.
_LocationKey = tuple[bool, str, int, int, int, int, str | None]

#: How many files of recent answers a call reads along with its own file.
RECENT = 64

#: Languages whose server answers from a partial view while it loads the project.
ANSWERS_WHILE_LOADING = frozenset({"node"})


def detector_for(path: str) -> Detector:
    """The detector whose language server owns `path`'s extension."""
    name = posixpath.basename(path)
    return _detector_of("." + name.rsplit(".", 1)[-1] if "." in name else "", path)


@functools.lru_cache(maxsize=64)
def _by_extension(ext: str) -> Detector | None:
    # The registry is fixed, and building it (four detectors) was a hundredth of a warm call.
    for det in _registry():
        if det.lsp_command and ext in det.lsp_extensions:
            return det
    return None


def _detector_of(ext: str, path: str) -> Detector:
    det = _by_extension(ext)
    if det is not None:
        return det
    known = sorted(e for d in _registry() for e in d.lsp_extensions)
    raise NoLanguageServerError(
        f"no language server for {path!r}: its extension {ext or '(none)'!r} belongs to no "
        f"supported language; navigation works on {', '.join(known)} files")


class LanguageServers:
    """Language servers in `sandbox`, over its workspaces (a `WorkspaceSet`, its operator
    form, a mapping, or None: the sandbox's worktree).

        async with LanguageServers(sandbox) as lsp:
            for ref in await lsp.find_references("store.go", 12, 6):
                print(ref.render())

    `index_timeout` bounds a cold server's start, indexing and first answer; `request_timeout`
    each later answer (both raise `LanguageServerTimeoutError`). `on_progress` hears what a
    server is busy with while a caller waits. `commands` replaces a language's server argv
    (e.g. `{"python": ["pylsp"]}`); by default each detector's `lsp_command` runs. Servers
    end with `aclose()`, or with the sandbox (they run marked, like every command).
    """

    def __init__(self, sandbox: Sandbox,
                 workspaces: WorkspaceSet | str | Mapping[str, str] | None = None, *,
                 env: Mapping[str, str] | None = None, index_timeout: float = 300.0,
                 request_timeout: float = 60.0,
                 on_progress: Callable[[str], None] | None = None,
                 commands: Mapping[str, Sequence[str]] | None = None,
                 files: Toolbox | None = None) -> None:
        if index_timeout <= 0 or request_timeout <= 0:
            raise ToolError("index_timeout and request_timeout must be positive seconds")
        self.commands: dict[str, list[str]] = {}
        for language, argv in (commands or {}).items():
            if isinstance(argv, str) or not argv or not all(isinstance(a, str) for a in argv):
                raise ToolError(f"commands[{language!r}] must be a non-empty argv list")
            self.commands[normalize_language(language)] = list(argv)
        if files is None:
            from ..tools import Toolbox

            files = Toolbox(sandbox, workspaces, env=env)
        self.sandbox = sandbox
        self.files = files
        self.workspaces = files.workspaces
        self.env = dict(env if env is not None else files.env)
        self.index_timeout = index_timeout
        self.request_timeout = request_timeout
        self.on_progress = on_progress
        self._servers: dict[tuple[str, str], LanguageServer] = {}
        self._locks: dict[tuple[str, str], anyio.Lock] = {}
        #: Files recent answers pointed into (insertion-ordered, bounded), read with the next
        #: call's own file so that its answer needs no second round trip.
        self._recent: dict[str, None] = {}
        #: Texts of files read before, sent again only when a stat or their digest says they
        #: changed (lsp/cache.py).
        self._cache = TextCache()
        #: Locations built before, by their fields (frozen models: equal fields, equal model).
        self._built: dict[_LocationKey, Location] = {}

    async def __aenter__(self) -> LanguageServers:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stop every server (the sandbox stays open)."""
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            with anyio.CancelScope(shield=True):
                await server.stop()

    def _progress(self, message: str) -> None:
        if self.on_progress is not None:
            self.on_progress(message)

    def running(self) -> list[str]:
        """The servers alive now, by name."""
        return [s.name for s in self._servers.values() if s.alive]

    # ---- servers ------------------------------------------------------------------------------

    async def server(self, ws: Workspace, detector: Detector) -> tuple[LanguageServer, float]:
        """The live server for (workspace, language), started when absent or dead; and the
        deadline of the call about to use it (a cold one gets `index_timeout`)."""
        key = (ws.root, detector.language)
        current = self._servers.get(key)
        if current is None or not current.alive:
            current = await self._start(key, ws, detector)
        if current.warm:
            return current, time.monotonic() + self.request_timeout
        return current, current.started + self.index_timeout

    async def _start(self, key: tuple[str, str], ws: Workspace, detector: Detector
                     ) -> LanguageServer:
        """The server of `key`, (re)started under its lock. A live server is taken without
        it (above): the lock's two checkpoints were two more turns of the event loop on
        every warm call, and a live server is what a wait for the lock would find."""
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            current = self._servers.get(key)
            if current is not None and not current.alive:
                await current.stop()
                current = None
            if current is None:
                current = LanguageServer(self.sandbox, detector, ws.root, env=self.env,
                                         on_progress=self._progress,
                                         argv=self.commands.get(detector.language))
                await current.start(self.index_timeout)
                self._servers[key] = current
        return current

    async def _request(self, server: LanguageServer, deadline: float, method: str,
                       params: Any) -> Any:
        for attempt in (1, 2):
            await server.settle(deadline, self._budget(server))
            begun = server.progress.begun
            result = await self._send(server, deadline, method, params)
            # An answer given while the server began loading is no answer: wait for the load
            # to end and ask once more. typescript-language-server starts loading the project
            # only when the first file opens, and meanwhile its syntax-only server answers
            # (a definition is then the import line, references are []); gopls and pyright
            # make a request wait for the load, so only their empty answers are asked again.
            loading = server.progress.begun != begun or server.busy() is not None
            partial = not result or server.language in ANSWERS_WHILE_LOADING
            if attempt == 2 or not (loading and partial):
                break
        server.warm = True
        return result

    async def _send(self, server: LanguageServer, deadline: float, method: str,
                    params: Any) -> Any:
        assert server.connection is not None
        left = deadline - time.monotonic()
        try:
            return await server.connection.request(method, params, timeout=max(left, 0.01))
        except TimeoutError:
            busy = server.busy()
            if busy is not None:
                # It began indexing after the request went out (a progress token opened late):
                # the same error as a wait for the index that ran out.
                raise LanguageServerTimeoutError(
                    f"{server.name} is still indexing after {self._budget(server):g}s ({busy}; "
                    f"last message: {server.progress.last or 'none'}); call again later, or "
                    "raise index_timeout") from None
            what = server.progress.last or "no progress reported"
            raise LanguageServerTimeoutError(
                f"{server.name} did not answer {method} within {self._budget(server):g}s "
                f"({what}); call again, or raise "
                f"{'request_timeout' if server.warm else 'index_timeout'}"
            ) from None
        except LanguageServerCrashedError:
            server.warm = False
            raise

    def _budget(self, server: LanguageServer) -> float:
        return self.request_timeout if server.warm else self.index_timeout

    # ---- files --------------------------------------------------------------------------------

    async def _open(self, path: str, workspace: str | None
                    ) -> tuple[Workspace, str, LanguageServer, Document, float]:
        if not path:
            raise ToolError("path is empty; name a source file in the workspace")
        ws = self.workspaces.choose(workspace)
        target = ws.contain(path)
        detector = detector_for(target)
        server, deadline = await self.server(ws, detector)
        # The cheap read (sh, stat, cat), not the race-free helper: this runs on every call,
        # and what is read here is only shown to the server. rename_symbol writes through
        # the helper, conditional on the text it reads then.
        texts = await read_many(self.sandbox, ws.root, [target, *self._opened(server, ws)],
                                env=self.env, cache=self._cache)
        text = texts.get(target)
        if text is None:
            _, text = await self.files._slurp("lsp", ws, target)  # its typed error says why
        await self._resync(server, texts, target)
        doc = await server.sync(target, text)
        return ws, target, server, doc, deadline

    def _opened(self, server: LanguageServer, ws: Workspace) -> list[str]:
        """The files of `ws` the server has open (earlier calls opened them)."""
        found = []
        for uri in server.documents:
            path = uri_path(uri)
            if path is not None and self._owner(path) is ws:
                found.append(path)
        return found

    def _stale(self, server: LanguageServer, texts: Mapping[str, str | None]) -> list[str]:
        """Files the server has open whose text on disk (as just read) is not the server's:
        a command changed them. The server answers from its copy of an open file, not from
        the disk, so each must be synced before it is asked."""
        stale = []
        for path, text in texts.items():
            doc = server.documents.get(file_uri(path))
            if doc is not None and text is not None and doc.text != text:
                stale.append(path)
        return stale

    async def _resync(self, server: LanguageServer, texts: Mapping[str, str | None],
                      skip: str = "") -> bool:
        """Sync every stale open file but `skip`; whether there was one."""
        stale = [p for p in self._stale(server, texts) if p != skip]
        for path in stale:
            text = texts[path]
            assert text is not None
            await server.sync(path, text)
        return bool(stale)

    async def _texts(self, paths: list[str], server: LanguageServer | None = None,
                     known: Mapping[str, str | None] | None = None
                     ) -> dict[str, positions.Lines | None]:
        """The lines of each file inside a workspace (None outside, or unreadable: a location
        there keeps the server's column). A file the server has open is taken as the server
        has it (its positions refer to that text); one in `known` (read in this call) as read;
        the others are read in ONE round trip per workspace."""
        out: dict[str, positions.Lines | None] = {}
        by_root: dict[str, list[str]] = {}
        for path in dict.fromkeys(paths):
            doc = server.documents.get(file_uri(path)) if server is not None else None
            ws = self._owner(path)
            text = (known or {}).get(path)
            if doc is not None:
                out[path] = positions.lines_of(doc.text)
            elif ws is None:
                out[path] = None
            elif text is not None:
                out[path] = positions.lines_of(text)
            else:
                by_root.setdefault(ws.root, []).append(path)
        for root, wanted in by_root.items():
            texts = await read_many(self.sandbox, root, wanted, env=self.env,
                                    cache=self._cache)
            for path in wanted:
                text = texts.get(path)
                out[path] = positions.lines_of(text) if text is not None else None
        return out

    def _owner(self, path: str) -> Workspace | None:
        for ws in self.workspaces:
            if path == ws.root or path.startswith(ws.root.rstrip("/") + "/"):
                return ws
        return None

    def _show(self, path: str) -> tuple[str, bool]:
        ws = self._owner(path)
        return (ws.relative(path), True) if ws is not None else (path, False)

    def _span(self, lines: positions.Lines | None, rng: Any) -> Span:
        start, end = rng.get("start", {}), rng.get("end", {})
        if lines is None:
            return Span(line=int(start.get("line", 0)) + 1,
                        column=int(start.get("character", 0)) + 1,
                        end_line=int(end.get("line", 0)) + 1,
                        end_column=int(end.get("character", 0)) + 1)
        line, column, end_line, end_column = positions.span_of(lines, rng)
        return Span(line=line, column=column, end_line=end_line, end_column=end_column)

    async def _locations(self, raw: Any, server: LanguageServer,
                         known: Mapping[str, str | None] | None = None) -> list[Location]:
        items = raw if isinstance(raw, list) else [raw] if isinstance(raw, dict) else []
        found: list[tuple[str, Any]] = []
        # An answer names few files many times (19 references in 4 files): each file's path
        # and how it is shown are worked out once.
        paths: dict[str, str | None] = {}
        for item in items:
            if not isinstance(item, dict):
                continue
            uri = item.get("uri") or item.get("targetUri")
            rng = item.get("range") or item.get("targetSelectionRange")
            if uri and str(uri) not in paths:
                paths[str(uri)] = uri_path(str(uri))
            path = paths[str(uri)] if uri else None
            if path is not None and isinstance(rng, dict):
                found.append((path, rng))
        texts = await self._texts([p for p, _ in found], server, known)
        # Each file once, in the order of its last location in the answer (as if each
        # location moved its file to the end): the next call reads these with its own file.
        for path in reversed(dict.fromkeys(p for p, _ in reversed(found))):
            if self._owner(path) is not None:
                self._recent.pop(path, None)
                self._recent[path] = None
        while len(self._recent) > RECENT:
            self._recent.pop(next(iter(self._recent)))
        files = {path: (texts.get(path), *self._show(path)) for path in texts}
        # A location as a tuple first: equal ones are dropped and the rest sorted before any
        # model is built, and a location seen before reuses its model (a warm call repeats
        # most of its answer; building the models was a third of its mapping).
        keys: dict[_LocationKey, None] = {}
        for path, rng in found:
            lines, shown, inside = files[path]
            if lines is None:
                start, end = rng.get("start", {}), rng.get("end", {})
                line, column = int(start.get("line", 0)) + 1, int(start.get("character", 0)) + 1
                end_line, end_column = (int(end.get("line", 0)) + 1,
                                        int(end.get("character", 0)) + 1)
            else:
                line, column, end_line, end_column = positions.span_of(lines, rng)
            keys[(not inside, shown, line, column, end_line, end_column,
                  _line(lines, line))] = None
        ordered = sorted(keys, key=lambda key: key[:4])  # stable: as sorting the models was
        if len(self._built) > 4096:
            self._built.clear()
        return [self._built.get(key) or self._build(key) for key in ordered]

    def _build(self, key: _LocationKey) -> Location:
        outside, shown, line, column, end_line, end_column, text = key
        span = Span(line=line, column=column, end_line=end_line, end_column=end_column)
        built = self._built[key] = Location(path=shown, in_workspace=not outside, span=span,
                                            text=text)
        return built

    async def _locate(self, method: str, path: str, line: int | None, column: int | None,
                      workspace: str | None, extra: Mapping[str, Any]) -> list[Location]:
        """A request answered with locations (definition, references), in one round trip to
        the sandbox when the server is warm: the request goes with the text the server has,
        while the file -- and the files recent answers pointed into, whose lines the answer
        will need, and every file the server has open -- are read; if one of those the server
        has open changed meanwhile, it is synced and the server asked again."""
        if line is None or column is None:
            raise ToolError("pass line and column (1-based, in characters) of the symbol")
        if not path:
            raise ToolError("path is empty; name a source file in the workspace")
        ws = self.workspaces.choose(workspace)
        target = ws.contain(path)
        server, deadline = await self.server(ws, detector_for(target))
        wanted = list(dict.fromkeys([
            target, *(p for p in self._recent if self._owner(p) is ws),
            *self._opened(server, ws)]))
        doc = server.documents.get(file_uri(target))
        if doc is not None and server.warm:
            params = self._params(doc, ws, target, line, column, extra)
            texts, raw = await _together(
                read_many(self.sandbox, ws.root, wanted, env=self.env, cache=self._cache),
                self._request(server, deadline, method, params))
            if texts.get(target) == doc.text and not self._stale(server, texts):
                return await self._locations(raw, server, texts)
        else:
            texts = await read_many(self.sandbox, ws.root, wanted, env=self.env,
                                    cache=self._cache)
        text = texts.get(target)
        if text is None:
            _, text = await self.files._slurp("lsp", ws, target)  # its typed error says why
        await self._resync(server, texts, target)
        doc = await server.sync(target, text)
        params = self._params(doc, ws, target, line, column, extra)
        raw = await self._request(server, deadline, method, params)
        return await self._locations(raw, server, texts)

    def _params(self, doc: Document, ws: Workspace, target: str, line: int, column: int,
                extra: Mapping[str, Any]) -> dict[str, Any]:
        where = positions.to_lsp(doc.text, line, column, path=ws.relative(target))
        return {"textDocument": {"uri": file_uri(target)}, "position": where, **extra}

    async def _position(self, path: str, line: int | None, column: int | None,
                        workspace: str | None
                        ) -> tuple[Workspace, str, LanguageServer, Document, float,
                                   dict[str, Any]]:
        if line is None or column is None:
            raise ToolError("pass line and column (1-based, in characters) of the symbol")
        ws, target, server, doc, deadline = await self._open(path, workspace)
        where = positions.to_lsp(doc.text, line, column, path=ws.relative(target))
        params = {"textDocument": {"uri": file_uri(target)}, "position": where}
        return ws, target, server, doc, deadline, params

    # ---- the operations -------------------------------------------------------------------

    async def find_definition(self, path: str, line: int | None = None,
                              column: int | None = None, *, symbol: str | None = None,
                              workspace: str | None = None) -> list[Location]:
        """Where the symbol at (line, column) of `path` is defined; or, with `symbol`, where
        the symbol of that name is defined (in `path` when given, else in the workspace)."""
        if symbol is not None:
            return await self._definition_by_name(path, symbol, workspace)
        return await self._locate("textDocument/definition", path, line, column, workspace, {})

    async def _definition_by_name(self, path: str, symbol: str,
                                  workspace: str | None) -> list[Location]:
        if not symbol.strip():
            raise ToolError("symbol is empty; name the symbol to find")
        name = symbol.strip()
        short = name.rsplit(".", 1)[-1]
        if path:
            symbols = await self.document_symbols(path, workspace=workspace)
        else:
            symbols = await self.workspace_symbols(short, workspace=workspace)
        hits = [s for s in symbols if _names(s, name)]
        return list(dict.fromkeys(s.location for s in hits))

    async def find_references(self, path: str, line: int | None = None,
                              column: int | None = None, *, include_declaration: bool = True,
                              workspace: str | None = None) -> list[Location]:
        """Every reference to the symbol at (line, column) of `path`, as the server resolves
        it (a method of a common name: only that method's callers, not every `.Name(`)."""
        return await self._locate("textDocument/references", path, line, column, workspace,
                                  {"context": {"includeDeclaration": include_declaration}})

    async def hover(self, path: str, line: int | None = None, column: int | None = None, *,
                    workspace: str | None = None) -> Hover | None:
        """The symbol's type or signature and its documentation (None: nothing there)."""
        _, _, server, doc, deadline, params = await self._position(path, line, column,
                                                                    workspace)
        raw = await self._request(server, deadline, "textDocument/hover", params)
        if not isinstance(raw, dict):
            return None
        text = _hover_text(raw.get("contents"))
        if not text:
            return None
        rng = raw.get("range")
        span = self._span(positions.lines_of(doc.text), rng) if isinstance(rng, dict) else None
        return Hover(text=text, span=span)

    async def document_symbols(self, path: str, *,
                               workspace: str | None = None) -> list[Symbol]:
        """Every symbol defined in `path`, outermost first, each with its container."""
        ws, target, server, doc, deadline = await self._open(path, workspace)
        raw = await self._request(server, deadline, "textDocument/documentSymbol",
                                  {"textDocument": {"uri": file_uri(target)}})
        lines = positions.lines_of(doc.text)
        out: list[Symbol] = []

        def walk(items: Any, container: str | None) -> None:
            for item in items if isinstance(items, list) else []:
                if not isinstance(item, dict) or not item.get("name"):
                    continue
                rng = item.get("selectionRange") or item.get("range") or (
                    item.get("location") or {}).get("range")
                if not isinstance(rng, dict):
                    continue
                span = self._span(lines, rng)
                text = lines[span.line - 1].rstrip("\r") if span.line <= len(lines) else None
                out.append(Symbol(
                    name=str(item["name"]), kind=SYMBOL_KINDS.get(item.get("kind", 0), "symbol"),
                    location=Location(path=ws.relative(target), in_workspace=True, span=span,
                                      text=text),
                    container=container or item.get("containerName") or None,
                    detail=item.get("detail") or None))
                walk(item.get("children"), str(item["name"]))

        walk(raw, None)
        return out

    async def workspace_symbols(self, query: str, *, language: str | None = None,
                                workspace: str | None = None,
                                external: bool = False) -> list[Symbol]:
        """Symbols whose name matches `query` (the server's fuzzy match), across the
        workspace, from the server of every language detected at its root (or `language`).
        Symbols outside the workspace (the standard library, dependencies) only with
        `external=True`."""
        ws = self.workspaces.choose(workspace)
        if language is not None:
            wanted = normalize_language(language)
            dets = [d for d in _registry() if d.language == wanted]
        else:
            found = await probe(self.sandbox, ws.root, env=self.env)
            dets = [d for d in detectors_for(found.files) if d.lsp_command]
            running = {lang for root, lang in self._servers if root == ws.root}
            have = {d.language for d in dets}
            dets += [d for d in _registry() if d.language in running - have]
        if not dets:
            raise NoLanguageServerError(
                f"workspace_symbols: no language detected at {ws.root} (no go.mod, "
                "Cargo.toml, package.json, pyproject.toml or setup.py); pass language")
        raw_all: list[Any] = []
        for det in dets:
            server, deadline = await self.server(ws, det)
            raw = await self._request(server, deadline, "workspace/symbol", {"query": query})
            raw_all += raw if isinstance(raw, list) else []
        located = [(item, uri_path(str((item.get("location") or {}).get("uri", ""))))
                   for item in raw_all if isinstance(item, dict)]
        if not external:
            located = [(i, p) for i, p in located if p is not None and self._owner(p) is ws]
        texts = await self._texts([p for _, p in located if p])
        out: list[Symbol] = []
        for item, path in located:
            rng = (item.get("location") or {}).get("range")
            if path is None or not isinstance(rng, dict):
                continue
            lines = texts.get(path)
            span = self._span(lines, rng)
            shown, inside = self._show(path)
            text = _line(lines, span.line)
            out.append(Symbol(
                name=str(item.get("name", "")),
                kind=SYMBOL_KINDS.get(item.get("kind", 0), "symbol"),
                location=Location(path=shown, in_workspace=inside, span=span, text=text),
                container=item.get("containerName") or None))
        out.sort(key=lambda s: (not s.location.in_workspace, s.name != query, s.location.path,
                                s.location.span.line))
        return list(dict.fromkeys(out))

    async def diagnostics(self, path: str, *, workspace: str | None = None) -> list[Diagnostic]:
        """The problems the server finds in `path` as it is now (type errors, unresolved
        names), waiting for the server to publish them."""
        ws, target, server, doc, deadline = await self._open(path, workspace)
        await server.saved(target)
        await server.settle(deadline, self._budget(server))
        wait_until = min(deadline, time.monotonic() + self._budget(server))
        items = await server.wait_diagnostics(file_uri(target), doc.synced, doc.version,
                                              wait_until)
        server.warm = True
        lines = positions.lines_of(doc.text)
        out = []
        for item in items:
            rng = item.get("range")
            if not isinstance(rng, dict):
                continue
            code = item.get("code")
            out.append(Diagnostic(
                path=ws.relative(target), span=self._span(lines, rng),
                severity=SEVERITIES.get(item.get("severity", 1), "error"),
                message=str(item.get("message", ""))[:4000],
                code=str(code) if code is not None else None,
                source=str(item["source"]) if item.get("source") else None))
        out.sort(key=lambda d: (d.span.line, d.span.column))
        return out

    async def rename_symbol(self, path: str, line: int, column: int, new_name: str, *,
                            workspace: str | None = None,
                            tracker: ReadTracker | None = None) -> Rename:
        """Rename the symbol at (line, column) everywhere the server finds it, and write the
        changed files.

        Refused, before anything is written: a change to a file outside the workspace; with
        a `tracker` (the toolbox's), a change to a file that was not read first (the error
        names them all). Each file is written only if it still holds the text it had when
        read (atomic per file); the answer lists every file and range changed.
        """
        if not new_name.strip():
            raise ToolError("new_name is empty; give the symbol's new name")
        ws, target, server, doc, deadline, params = await self._position(
            path, line, column, workspace)
        old_name = _word_at(doc.text, line, column)
        provider = server.capabilities.get("renameProvider")
        if isinstance(provider, dict) and provider.get("prepareProvider"):
            ready = await self._request(server, deadline, "textDocument/prepareRename", params)
            if ready is None:
                raise ToolError(f"{ws.relative(target)}:{line}:{column}: nothing the "
                                f"{server.language} server can rename is there; point at the "
                                "symbol's name")
        raw = await self._request(server, deadline, "textDocument/rename",
                                  {**params, "newName": new_name})
        per_file = _edits_by_file(raw)
        if not per_file:
            raise ToolError(f"the {server.language} server renames nothing at "
                            f"{ws.relative(target)}:{line}:{column}")
        outside = [p for p in per_file if self._owner(p) is not ws]
        if outside:
            raise PathOutsideWorkspaceError(
                f"rename_symbol refused: the rename would change {len(outside)} file(s) outside "
                f'workspace "{ws.name}" (root {ws.root}): {", ".join(sorted(outside)[:10])}; '
                "nothing was changed (rename a symbol the workspace owns)")
        for p in per_file:
            ws.contain(p)  # normalised and inside: the write's own check follows symlinks
        if tracker is not None:
            unread = sorted(ws.relative(p) for p in per_file if p not in tracker)
            if unread:
                raise NotReadError(
                    f"rename_symbol: read these files first, then rename again (a rename "
                    f"changes them): {', '.join(unread)}")
        planned: list[tuple[str, str, str, str, list[dict[str, Any]]]] = []
        for p, edits in per_file.items():
            digest, text = await self.files._slurp("rename_symbol", ws, p)
            opened = server.documents.get(file_uri(p))
            if opened is not None and opened.text != text:
                raise NotReadError(
                    f"rename_symbol: {ws.relative(p)} changed while the server computed the "
                    "rename; nothing was changed; call rename_symbol again")
            planned.append((p, digest, text, positions.apply_edits(text, edits), edits))
        changed: list[FileChange] = []
        written: list[str] = []
        for p, digest, old_text, new_text, edits in planned:
            try:
                await self.files._replace("rename_symbol", ws, p, digest, new_text)
            except Exception as exc:
                done = ", ".join(ws.relative(w) for w in written) or "none"
                raise type(exc)(f"{exc} (rename_symbol had already written: {done})") from exc
            written.append(p)
            old_lines = positions.lines_of(old_text)
            changed.append(FileChange(path=ws.relative(p), changes=[
                TextChange(span=self._span(old_lines, e["range"]),
                           new_text=str(e.get("newText", ""))) for e in edits]))
        for p, _, _, new_text, _ in planned:
            if file_uri(p) in server.documents:
                await server.sync(p, new_text)
        await server.files_changed([p for p, *_ in planned
                                    if file_uri(p) not in server.documents])
        changed.sort(key=lambda f: f.path)
        return Rename(old_name=old_name, new_name=new_name, files=changed)


async def _together(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both results, run at once; the first failure is raised (not an exception group), and
    a cancel cancels both. `second` runs in the caller's task, `first` in one of its own:
    gather's two tasks and its future were a few more turns of the event loop per call."""
    task = asyncio.ensure_future(first)
    try:
        got = await second
    except asyncio.CancelledError:
        task.cancel()
        await asyncio.wait({task})  # as gather: the cancel is over once both are
        if not task.cancelled():
            task.exception()  # retrieved: it failed as it was cancelled, nothing to report
        raise
    except BaseException:
        await asyncio.wait({task})  # as gather: both end, and the first's failure comes first
        if not task.cancelled() and task.exception() is not None:
            raise task.exception() from None  # type: ignore[misc]
        raise
    return await task, got


def _names(symbol: Symbol, wanted: str) -> bool:
    """Whether `symbol` is the one the model named: `Get`, `Store.Get` (a method by its
    type, however the server spells the receiver: `(*Store).Get`), or `pkg.Store.Get`."""
    plain = symbol.name.replace("(*", "").replace("(", "").replace(")", "")
    if wanted in (symbol.name, plain):
        return True
    if "." not in wanted:
        return plain.rsplit(".", 1)[-1] == wanted
    container = _owner(symbol.container) if symbol.container else None
    full = f"{container}.{plain}" if container else plain
    return full == wanted or full.endswith("." + wanted)


def _owner(container: str) -> str:
    """The type a container names: rust-analyzer's document symbols put a method in
    `impl Store`, `impl<T> Store<T>` or `impl Display for Store`, its workspace symbols in
    `Store`."""
    if not container.startswith("impl"):
        return container
    body = container.removeprefix("impl").strip()
    if body.startswith("<"):  # the impl's own generics
        depth = 0
        for at, char in enumerate(body):
            depth += (char == "<") - (char == ">")
            if depth == 0:
                body = body[at + 1:].strip()
                break
    body = body.rsplit(" for ", 1)[-1].strip()
    return body.split("<", 1)[0].strip() or container


def _line(lines: positions.Lines | None, line: int) -> str | None:
    return lines[line - 1].rstrip("\r") if lines and 0 < line <= len(lines) else None


def _word_at(text: str, line: int, column: int) -> str:
    lines = positions.lines_of(text)
    current = lines[line - 1] if 0 < line <= len(lines) else ""
    start = end = column - 1
    while start > 0 and (current[start - 1].isalnum() or current[start - 1] == "_"):
        start -= 1
    while end < len(current) and (current[end].isalnum() or current[end] == "_"):
        end += 1
    return current[start:end]


def _hover_text(contents: Any) -> str:
    if isinstance(contents, str):
        return contents.strip()
    if isinstance(contents, dict):
        return str(contents.get("value", "")).strip()
    if isinstance(contents, list):
        return "\n\n".join(t for t in (_hover_text(c) for c in contents) if t)
    return ""


def _edits_by_file(raw: Any) -> dict[str, list[dict[str, Any]]]:
    """A WorkspaceEdit's text edits by absolute path (`changes` or `documentChanges`); a
    file operation (create, rename, delete) is refused: a symbol rename never needs one."""
    out: dict[str, list[dict[str, Any]]] = {}
    if not isinstance(raw, dict):
        return out
    for uri, edits in (raw.get("changes") or {}).items():
        path = uri_path(str(uri))
        if path is None:
            raise ToolError(f"the server's rename edits a non-file URI {uri!r}; refused")
        out.setdefault(path, []).extend(e for e in edits if isinstance(e, dict))
    for change in raw.get("documentChanges") or []:
        if not isinstance(change, dict):
            continue
        if "kind" in change:
            raise ToolError(f"the server's rename would {change['kind']} a file; refused, "
                            "nothing was changed")
        uri = str((change.get("textDocument") or {}).get("uri", ""))
        path = uri_path(uri)
        if path is None:
            raise ToolError(f"the server's rename edits a non-file URI {uri!r}; refused")
        out.setdefault(path, []).extend(e for e in change.get("edits") or []
                                        if isinstance(e, dict) and "range" in e)
    return {p: e for p, e in out.items() if e}
