"""What navigation answers, in the model's coordinates: paths relative to the workspace root
(absolute outside it), 1-based lines and columns counted in characters (code points)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

Severity = Literal["error", "warning", "information", "hint"]

#: LSP's SymbolKind numbers, by name.
SYMBOL_KINDS: dict[int, str] = dict(enumerate((
    "file", "module", "namespace", "package", "class", "method", "property", "field",
    "constructor", "enum", "interface", "function", "variable", "constant", "string", "number",
    "boolean", "array", "object", "key", "null", "enum member", "struct", "event", "operator",
    "type parameter"), start=1))
SEVERITIES: dict[int, Severity] = {1: "error", 2: "warning", 3: "information", 4: "hint"}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Span(_Model):
    """A range of text: start inclusive, end exclusive (both 1-based, in characters)."""

    line: int
    column: int
    end_line: int
    end_column: int


class Location(_Model):
    """A place in a file, and the text of its first line (None outside the workspaces)."""

    path: str
    """Relative to the workspace root; absolute when outside it (the standard library)."""
    in_workspace: bool
    span: Span
    text: str | None = None

    def render(self) -> str:
        where = f"{self.path}:{self.span.line}:{self.span.column}"
        return f"{where}: {self.text.strip()}" if self.text is not None else where


class Symbol(_Model):
    """A named thing a server knows: its kind, where it is, what contains it."""

    name: str
    kind: str
    location: Location
    container: str | None = None
    detail: str | None = None

    def render(self) -> str:
        inside = f" in {self.container}" if self.container else ""
        return (f"{self.kind} {self.name}{inside} at {self.location.path}:"
                f"{self.location.span.line}:{self.location.span.column}")


class Hover(_Model):
    """A server's hover: the symbol's type or signature and its documentation."""

    text: str
    span: Span | None = None


class Diagnostic(_Model):
    """One problem the server found in a file."""

    path: str
    span: Span
    severity: Severity
    message: str
    code: str | None = None
    source: str | None = None

    def render(self) -> str:
        code = f" [{self.code}]" if self.code else ""
        return (f"{self.path}:{self.span.line}:{self.span.column}: {self.severity}{code}: "
                f"{self.message}")


class TextChange(_Model):
    """One replacement a rename made: the span in the file as it was, and its new text."""

    span: Span
    new_text: str


class FileChange(_Model):
    """Every replacement a rename made in one file."""

    path: str
    changes: list[TextChange]


class Rename(_Model):
    """What a rename changed (already written to the files)."""

    old_name: str
    new_name: str
    files: list[FileChange]

    @property
    def count(self) -> int:
        return sum(len(f.changes) for f in self.files)
