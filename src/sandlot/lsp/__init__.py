"""Code navigation through language servers running in the sandbox.

    from sandlot.lsp import LanguageServers

    async with LanguageServers(sandbox) as lsp:
        [where] = await lsp.find_definition("cmd/main.go", 14, 9)
        refs = await lsp.find_references("store/store.go", 30, 17)
        done = await lsp.rename_symbol("store/store.go", 30, 17, "Fetch")

One server per workspace root and language (gopls, pyright, typescript-language-server,
rust-analyzer: each detector names its own and the extensions it owns), started on first use,
reused, restarted after it died, ended with `aclose()` or the sandbox. Positions are 1-based
lines and columns in characters; paths are relative to the workspace root.
"""

from .models import (
    Diagnostic,
    FileChange,
    Hover,
    Location,
    Rename,
    Span,
    Symbol,
    TextChange,
)
from .navigator import LanguageServers, detector_for

__all__ = [
    "Diagnostic",
    "FileChange",
    "Hover",
    "LanguageServers",
    "Location",
    "Rename",
    "Span",
    "Symbol",
    "TextChange",
    "detector_for",
]
