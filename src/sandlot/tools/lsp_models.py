"""The arguments and results of the navigation tools (lsp_tools.py): the argument models are
the tool schemas, their descriptions what the model reads."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ..lsp.models import Diagnostic, Hover, Location, Rename, Symbol
from .models import ToolResult, _Args

_WORKSPACE = (
    "Name of the workspace (repository root) to act in. Optional when the sandbox has one "
    "workspace; required when it has several."
)
_PATH = "Source file, relative to the workspace root. Its extension picks the language server."
_LINE = "1-based line of the symbol."
_COLUMN = ("1-based column of the symbol, counted in characters (a tab is one); any "
           "character of the name works.")
#: How many locations / symbols / diagnostics the text lists (all stay in the fields).
SHOWN = 100


class FindDefinitionArgs(_Args):
    """Where a symbol is defined."""

    path: str = Field(description=_PATH)
    line: int | None = Field(default=None, ge=1, description=_LINE + " Omit with `symbol`.")
    column: int | None = Field(default=None, ge=1, description=_COLUMN + " Omit with `symbol`.")
    symbol: str | None = Field(default=None, description="Instead of line and column: the "
                               "symbol's name (`Get`, `Store.Get`), looked up in `path` (or "
                               "in the whole workspace when path is empty).")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class PositionArgs(_Args):
    """A symbol at a position in a file."""

    path: str = Field(description=_PATH)
    line: int = Field(ge=1, description=_LINE)
    column: int = Field(ge=1, description=_COLUMN)
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class FileArgs(_Args):
    """One source file."""

    path: str = Field(description=_PATH)
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class WorkspaceSymbolsArgs(_Args):
    """Symbols across the workspace by name."""

    query: str = Field(description="Name or part of it (the server matches fuzzily).")
    language: Literal["go", "rust", "node", "python"] | None = Field(
        default=None, description="Ask only this language's server; omitted: every language "
        "detected at the workspace root.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class RenameSymbolArgs(_Args):
    """Rename a symbol everywhere it is used."""

    path: str = Field(description=_PATH)
    line: int = Field(ge=1, description=_LINE)
    column: int = Field(ge=1, description=_COLUMN)
    new_name: str = Field(description="The new name.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class LocationsResult(ToolResult):
    """find_definition / find_references: the places found."""

    workspace: str
    locations: list[Location]


class HoverResult(ToolResult):
    workspace: str
    hover: Hover | None


class SymbolsResult(ToolResult):
    workspace: str
    symbols: list[Symbol]


class DiagnosticsResult(ToolResult):
    workspace: str
    path: str
    diagnostics: list[Diagnostic]


class RenameResult(ToolResult):
    workspace: str
    rename: Rename
