"""Code navigation (sandlot.lsp) as agent tools: find_definition, find_references, hover,
document_symbols, workspace_symbols, diagnostics and rename_symbol, each with the optional
`workspace` of every file tool.

The toolbox owns one `LanguageServers` over its sandbox and workspaces, made on first use:
files are read and written through the toolbox's own race-free file tools, so rename_symbol
honours read-only mode (it is not offered) and the read-tracker (every file it would change
must have been read). While a server indexes, its progress messages go to `on_output`, which
the MCP server turns into progress notifications.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, cast

from .base import ToolboxBase
from .lsp_models import (
    SHOWN,
    DiagnosticsResult,
    HoverResult,
    LocationsResult,
    RenameResult,
    SymbolsResult,
)

if TYPE_CHECKING:
    from ..lsp import LanguageServers
    from .toolbox import Toolbox

def _listing(items: list[str], empty: str, noun: str) -> str:
    lines = items[:SHOWN] or [empty]
    if len(items) > SHOWN:
        lines.append(f"[{len(items) - SHOWN} more {noun} in the structured result]")
    return "\n".join(lines)


class NavigationTools(ToolboxBase):
    """sandlot.lsp over the toolbox's sandbox and workspaces."""

    _lsp: LanguageServers | None
    _lsp_listeners: list[Callable[[str], None]]
    index_timeout: float

    @property
    def language_servers(self) -> LanguageServers:
        """The toolbox's language servers (started on first use, one per workspace root and
        language; `aclose()` ends them)."""
        if self._lsp is None:
            from ..lsp import LanguageServers

            self._lsp = LanguageServers(self.sandbox, env=self.env, files=cast("Toolbox", self),
                                        on_progress=self._lsp_progress,
                                        index_timeout=self.index_timeout,
                                        request_timeout=self.timeout)
        return self._lsp

    def _lsp_progress(self, message: str) -> None:
        # A server's progress arrives in its reader task, outside any call's context: each
        # waiting call hears it in its own (the MCP server keeps its call's state there).
        for listener in list(self._lsp_listeners):
            listener(message)

    @contextlib.contextmanager
    def _listening(self) -> Iterator[None]:
        if self.on_output is None:
            yield
            return
        report, context = self.on_output, contextvars.copy_context()

        def listener(message: str) -> None:
            context.run(report, message)

        self._lsp_listeners.append(listener)
        try:
            yield
        finally:
            self._lsp_listeners.remove(listener)

    async def find_definition(self, path: str, line: int | None = None,
                              column: int | None = None, symbol: str | None = None, *,
                              workspace: str | None = None) -> LocationsResult:
        """sandlot.lsp: where the symbol at (line, column), or named `symbol`, is defined."""
        ws = self.workspaces.choose(workspace)
        with self._listening():
            found = await self.language_servers.find_definition(
                path, line, column, symbol=symbol, workspace=ws.name)
        what = symbol or f"{path}:{line}:{column}"
        text = _listing([loc.render() for loc in found], f"(no definition found for {what})",
                        "locations")
        return LocationsResult(tool="find_definition", text=text, workspace=ws.name,
                               locations=found)

    async def find_references(self, path: str, line: int, column: int, *,
                              workspace: str | None = None) -> LocationsResult:
        """sandlot.lsp: every reference to the symbol at (line, column)."""
        ws = self.workspaces.choose(workspace)
        with self._listening():
            found = await self.language_servers.find_references(path, line, column,
                                                                workspace=ws.name)
        files = len({loc.path for loc in found})
        head = f"{len(found)} references in {files} files"
        text = head + "\n" + _listing([loc.render() for loc in found], "(none)", "references")
        return LocationsResult(tool="find_references", text=text, workspace=ws.name,
                               locations=found)

    async def hover(self, path: str, line: int, column: int, *,
                    workspace: str | None = None) -> HoverResult:
        """sandlot.lsp: the type or signature and the docs of the symbol at (line, column)."""
        ws = self.workspaces.choose(workspace)
        with self._listening():
            found = await self.language_servers.hover(path, line, column, workspace=ws.name)
        text = found.text if found is not None else f"(nothing to show at {path}:{line}:{column})"
        return HoverResult(tool="hover", text=text, workspace=ws.name, hover=found)

    async def document_symbols(self, path: str, *,
                               workspace: str | None = None) -> SymbolsResult:
        """sandlot.lsp: every symbol defined in a file."""
        ws = self.workspaces.choose(workspace)
        with self._listening():
            found = await self.language_servers.document_symbols(path, workspace=ws.name)
        text = _listing([s.render() for s in found], f"(no symbols in {path})", "symbols")
        return SymbolsResult(tool="document_symbols", text=text, workspace=ws.name,
                             symbols=found)

    async def workspace_symbols(self, query: str, language: str | None = None, *,
                                workspace: str | None = None) -> SymbolsResult:
        """sandlot.lsp: symbols across the workspace whose name matches `query`."""
        ws = self.workspaces.choose(workspace)
        with self._listening():
            found = await self.language_servers.workspace_symbols(
                query, language=language, workspace=ws.name)
        text = _listing([s.render() for s in found], f"(no symbols match {query!r})",
                        "symbols")
        return SymbolsResult(tool="workspace_symbols", text=text, workspace=ws.name,
                             symbols=found)

    async def diagnostics(self, path: str, *,
                          workspace: str | None = None) -> DiagnosticsResult:
        """sandlot.lsp: the problems the language server finds in a file."""
        ws = self.workspaces.choose(workspace)
        with self._listening():
            found = await self.language_servers.diagnostics(path, workspace=ws.name)
        text = _listing([d.render() for d in found], f"(no problems in {path})",
                        "diagnostics")
        return DiagnosticsResult(tool="diagnostics", text=text, workspace=ws.name,
                                 path=path, diagnostics=found)

    async def rename_symbol(self, path: str, line: int, column: int, new_name: str, *,
                            workspace: str | None = None) -> RenameResult:
        """sandlot.lsp: rename the symbol at (line, column) in every file that uses it; each
        of those files must have been read first."""
        self._mutating("rename_symbol")
        ws = self.workspaces.choose(workspace)
        with self._listening():
            done = await self.language_servers.rename_symbol(
                path, line, column, new_name, workspace=ws.name, tracker=self.tracker)
        lines = [f"Renamed {done.old_name} to {done.new_name}: {done.count} changes in "
                 f"{len(done.files)} files"]
        for change in done.files:
            places = ", ".join(f"{c.span.line}:{c.span.column}" for c in change.changes)
            lines.append(f"{change.path}: {places}")
        return RenameResult(tool="rename_symbol", text="\n".join(lines), workspace=ws.name,
                            rename=done)
