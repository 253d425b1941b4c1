"""The toolbox's tools as agent frameworks register them: name, description, argument model,
and whether the tool changes anything (a read-only toolbox offers only the others)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from .lsp_models import (
    FileArgs,
    FindDefinitionArgs,
    PositionArgs,
    RenameSymbolArgs,
    WorkspaceSymbolsArgs,
)
from .models import (
    BashArgs,
    BashOutputArgs,
    EditArgs,
    GlobArgs,
    GrepArgs,
    KillShellArgs,
    ReadArgs,
    RunCodeArgs,
    SecretEnvArgs,
    WriteArgs,
)
from .snapshot_models import (
    SnapshotCreateArgs,
    SnapshotDiffArgs,
    SnapshotListArgs,
    SnapshotRestoreArgs,
)
from .verify_tools import RunScriptArgs, RunTestsArgs, VerifyArgs
from .watch_tools import WatchProcessArgs, WatchProcessEventsArgs


@dataclass(frozen=True)
class ToolSpec:
    """One tool as agent frameworks register it."""

    name: str
    description: str
    args: type[BaseModel]
    mutating: bool


TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in [
        ToolSpec("read", "Read a text file in the workspace. Returns numbered lines "
                 "(`     N<TAB>text`); page through large files with offset and limit. "
                 "Binary files are refused. Reading a file is required before write "
                 "overwrites it or edit changes it.", ReadArgs, False),
        ToolSpec("write", "Write a whole file in the workspace, creating parent directories. "
                 "Overwriting an existing file requires reading it first. The write is "
                 "atomic: the file is replaced whole or not at all.", WriteArgs, True),
        ToolSpec("edit", "Replace exact text in a file that was read first. `old` must occur "
                 "exactly once (or set replace_all); copy it from read's output without the "
                 "line-number prefix.", EditArgs, True),
        ToolSpec("glob", "List files whose path matches a glob, relative to the workspace "
                 "root, sorted by name. Skips .git and node_modules unless searching inside "
                 "them.", GlobArgs, False),
        ToolSpec("grep", "Search file contents with a regular expression. Output lines are "
                 "`path:line:text` for matches and `path-line-text` for context, paths "
                 "relative to the workspace root.", GrepArgs, False),
        ToolSpec("bash", "Run a shell command in the workspace root and return its exit code "
                 "and output (the tail, if long). With background=true it returns a "
                 "shell_id at once.", BashArgs, True),
        ToolSpec("bash_output", "Read the new output and the status of a background shell.",
                 BashOutputArgs, True),
        ToolSpec("kill_shell", "End a background shell and every process it started.",
                 KillShellArgs, True),
        ToolSpec("run_code", "Run a snippet of code (python, golang, node or shell) in a "
                 "fresh file in the sandbox and return its exit code and output; "
                 "requirements are installed first.", RunCodeArgs, True),
        ToolSpec("run_tests", "Run the project's whole test suite in the workspace (go test, "
                 "cargo test, the package.json test script, pytest) and return passed/failed "
                 "counts and each failure with its file and line; with coverage=true, also "
                 "line coverage per file (the lines never run) and in total.", RunTestsArgs,
                 True),
        ToolSpec("run_lint", "Run the project's linter in the workspace (golangci-lint, "
                 "clippy, eslint, ruff) and return its findings.", VerifyArgs, True),
        ToolSpec("run_typecheck", "Run the project's type checker in the workspace (go vet, "
                 "cargo check, tsc, mypy) and return its findings.", VerifyArgs, True),
        ToolSpec("run_failing_tests", "Run again only the tests that failed in this "
                 "workspace's last run_tests (or run_failing_tests), and return their new "
                 "results.", VerifyArgs, True),
        ToolSpec("run_script", "Run a package.json script in the workspace with the project's "
                 "package manager.", RunScriptArgs, True),
        ToolSpec("find_definition", "Find where a symbol is defined, through the language's "
                 "server (gopls, pyright, typescript-language-server, rust-analyzer): give the "
                 "file and the 1-based line and column of a use, or the symbol's name. Returns "
                 "`path:line:column: text` per definition.", FindDefinitionArgs, False),
        ToolSpec("find_references", "Find every reference to the symbol at a position, as the "
                 "language server resolves it: exact where grep over-matches (methods with "
                 "common names, shadowing). Returns `path:line:column: text` per reference.",
                 PositionArgs, False),
        ToolSpec("hover", "Show the type or signature and the documentation of the symbol at a "
                 "position.", PositionArgs, False),
        ToolSpec("document_symbols", "List the symbols (types, functions, methods, fields) "
                 "defined in a file, with their positions.", FileArgs, False),
        ToolSpec("workspace_symbols", "Find symbols across the workspace by name (fuzzy), with "
                 "their positions.", WorkspaceSymbolsArgs, False),
        ToolSpec("diagnostics", "The problems (type errors, unresolved names) the language "
                 "server finds in a file as it is now.", FileArgs, False),
        ToolSpec("rename_symbol", "Rename the symbol at a position in every file that uses it, "
                 "through the language server; every file it changes must have been read first "
                 "(the error lists them). Returns the files and positions changed.",
                 RenameSymbolArgs, True),
        ToolSpec("watch_process", "Start a command in the background and watch it for crash "
                 "lines (panics, tracebacks, unhandled errors, segfaults, OOM kills, and your "
                 "own patterns) and silence (idle_kill), or attach to one by process_id. It "
                 "survives a dropped connection.", WatchProcessArgs, True),
        ToolSpec("watch_process_events", "What a watched process did since a cursor: lines "
                 "that matched a pattern, then how it ended (exit code, idle kill). Returns "
                 "the cursor to pass next time.", WatchProcessEventsArgs, True),
        ToolSpec("secret_env", "List the names of the secrets configured for this sandbox. "
                 "Pass them as secrets=[...] to bash or a verify tool; you never see their "
                 "values.", SecretEnvArgs, True),
        ToolSpec("snapshot_create", "Record the workspace's files (not the user's git "
                 "repository: a store of sandlot's own) so a bad step can be taken back with "
                 "snapshot_restore. Build output the .gitignore files ignore is left out.",
                 SnapshotCreateArgs, True),
        ToolSpec("snapshot_list", "List the workspace's snapshots, oldest first: id, time, "
                 "files, bytes, label.", SnapshotListArgs, False),
        ToolSpec("snapshot_restore", "Put the workspace's files back exactly as a snapshot "
                 "recorded them; files made since are removed. Refused while a process still "
                 "works in the workspace unless force is set.", SnapshotRestoreArgs, True),
        ToolSpec("snapshot_diff", "Compare the workspace now with a snapshot: the changed "
                 "paths (A added, D deleted, M modified) and a git patch from the snapshot to "
                 "now.", SnapshotDiffArgs, False),
    ]
}


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated `title`s: noise in a tool schema a model reads."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema
