"""The agent toolbox: read, write, edit, glob, grep and bash over named workspaces.

Each file tool call is one sandbox round trip (edit: two), whatever the backend: the
containment check, the symlink resolution and the operation run together in one small POSIX
sh script (see scripts.py). Paths are contained per workspace (workspaces.py); writes and
edits of existing files need a prior read (the read-tracker); writes are atomic.
"""

from __future__ import annotations

import contextlib
import json
import posixpath
import secrets
from collections.abc import AsyncIterable, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ValidationError

from ..config_errors import describe
from ..errors import (
    EditMatchError,
    NotReadError,
    PathOutsideWorkspaceError,
    ProcessNotFoundError,
    ReadOnlyError,
    SandlotError,
    ToolError,
    WorkspaceError,
)
from ..sandbox import ExecResult, Sandbox
from ..workspaces import Workspace, WorkspaceSet
from . import safe_mode, scripts
from .models import (
    BashArgs,
    BashOutputArgs,
    BashOutputResult,
    BashResult,
    EditArgs,
    EditResult,
    ErrorResult,
    GlobArgs,
    GlobResult,
    GrepArgs,
    GrepLine,
    GrepResult,
    KillShellArgs,
    KillShellResult,
    ReadArgs,
    ReadResult,
    RunCodeArgs,
    RunCodeResult,
    ToolResult,
    WriteArgs,
    WriteResult,
)
from .parse import parse_listing, parse_search
from .patterns import glob_to_ere, pcre_to_ere
from .runner import ScriptResult, run_script
from .safe_mode import Containment
from .shells import Shell, ShellRegistry
from .verify_tools import (
    RunScriptArgs,
    VerifyArgs,
    VerifyResult,
    render_findings,
    render_script,
    render_tests,
)

#: Directories glob and grep do not descend into (unless the search starts inside one):
#: version-control metadata and dependency trees, which drown every search.
DEFAULT_EXCLUDES: tuple[str, ...] = (".git", ".hg", ".svn", "node_modules")

#: The sh scripts the race-free helper replaces (by its operation name) in `descriptor` mode.
_SAFE_OPS: dict[str, str] = {
    scripts.READ: "read",
    scripts.SLURP: "slurp",
    scripts.WRITE: "write",
    scripts.DISCARD: "discard",
    scripts.GREP: "grep",
    scripts.GLOB: "glob",
}

#: Bytes of a glob or grep listing brought back from the sandbox (cut there with head -c, so
#: the bound holds however long one line is); lines and paths are then counted and capped here.
SEARCH_BYTES = 8 << 20


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
                 "counts and each failure with its file and line.", VerifyArgs, True),
        ToolSpec("run_lint", "Run the project's linter in the workspace (golangci-lint, "
                 "clippy, eslint, ruff) and return its findings.", VerifyArgs, True),
        ToolSpec("run_typecheck", "Run the project's type checker in the workspace (go vet, "
                 "cargo check, tsc, mypy) and return its findings.", VerifyArgs, True),
        ToolSpec("run_failing_tests", "Run again only the tests that failed in this "
                 "workspace's last run_tests (or run_failing_tests), and return their new "
                 "results.", VerifyArgs, True),
        ToolSpec("run_script", "Run a package.json script in the workspace with the project's "
                 "package manager.", RunScriptArgs, True),
    ]
}


class ReadTracker:
    """Absolute (workspace-resolved) paths that were read, so write/edit may change them.

    One tracker serves every workspace of a toolbox: entries are absolute, so reading
    `main.go` in one workspace does not unlock `main.go` in another.
    """

    def __init__(self) -> None:
        self._paths: set[str] = set()

    def mark(self, path: str) -> None:
        self._paths.add(path)

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __len__(self) -> int:
        return len(self._paths)


def _quote_list(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


class Toolbox:
    """File and shell tools for an agent, over one sandbox and its named workspaces.

        box = Toolbox(sandbox, "svc=/w/svc,lib=/w/lib")
        page = await box.read("go.mod", workspace="svc")
        print(page.text)

    `workspaces` is a `WorkspaceSet`, its operator form, a `{name: root}` mapping, or None
    (one workspace at the sandbox's worktree). `readonly=True` exposes read, glob and grep
    only. `use_ripgrep=False` forces the portable search path even where rg is installed.
    `env` is added to every command the tools run.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        workspaces: WorkspaceSet | str | Mapping[str, str] | None = None,
        readonly: bool = False,
        *,
        use_ripgrep: bool = True,
        env: Mapping[str, str] | None = None,
        exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDES,
        tracker: ReadTracker | None = None,
        timeout: float = 60.0,
        bash_timeout: float = 120.0,
        read_lines: int = 2000,
        read_bytes: int = 256 << 10,
        max_line_chars: int = 2000,
        max_results: int = 500,
        bash_output_bytes: int = 30_000,
        edit_bytes: int = 16 << 20,
    ) -> None:
        for name in exclude_dirs:
            if not name or "/" in name or name in (".", ".."):
                raise ToolError(f"exclude_dirs holds {name!r}; give plain directory names")
        self.sandbox = sandbox
        self.workspaces = WorkspaceSet.coerce(workspaces, default_root=sandbox.worktree)
        self.readonly = readonly
        self.use_ripgrep = use_ripgrep
        self.env = dict(env or {})
        self.exclude_dirs = tuple(exclude_dirs)
        self.tracker = tracker if tracker is not None else ReadTracker()
        self.timeout = timeout
        self.bash_timeout = bash_timeout
        self.read_lines = read_lines
        self.read_bytes = read_bytes
        self.max_line_chars = max_line_chars
        self.max_results = max_results
        self.bash_output_bytes = bash_output_bytes
        self.edit_bytes = edit_bytes
        self.shells = ShellRegistry()
        self._containment: Containment | None = None
        #: Called with each output line of a foreground bash or run_code while it runs (the
        #: MCP server turns them into progress notifications).
        self.on_output: Callable[[str], None] | None = None

    def __repr__(self) -> str:
        mode = " readonly" if self.readonly else ""
        return f"<Toolbox {self.workspaces.to_spec()!r}{mode} on {self.sandbox!r}>"

    # ---- the tool surface for agent frameworks ------------------------------------------

    @property
    def tool_names(self) -> list[str]:
        """The tools this toolbox offers (read, glob and grep only when read-only)."""
        return [n for n, spec in TOOLS.items() if not (self.readonly and spec.mutating)]

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Every offered tool as an OpenAI-style function tool (adr/0017 says why this shape):

            {"type": "function", "function": {"name", "description", "parameters"}}

        `parameters` is the JSON schema of the tool's pydantic argument model; `workspace`
        lists the configured names as an enum and is required when there are several.
        """
        out: list[dict[str, Any]] = []
        for name in self.tool_names:
            spec = TOOLS[name]
            out.append({
                "type": "function",
                "function": {
                    "name": name,
                    "description": spec.description,
                    "parameters": self._parameters(spec.args),
                },
            })
        return out

    def _parameters(self, model: type[BaseModel]) -> dict[str, Any]:
        schema: dict[str, Any] = _strip_titles(model.model_json_schema())
        schema.pop("description", None)
        props: dict[str, Any] = schema.get("properties", {})
        if "workspace" in props:
            props["workspace"] = {
                "type": "string",
                "enum": self.workspaces.names,
                "description": props["workspace"].get("description", ""),
            }
            if len(self.workspaces) > 1:
                schema.setdefault("required", []).append("workspace")
        schema["additionalProperties"] = False
        return schema

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None = None
                   ) -> ToolResult:
        """Run tool `name` with JSON-like `arguments` (a mapping or a JSON string).

        Never raises for a bad call: unknown tools, invalid arguments and tool errors come
        back as an `ErrorResult` whose text tells the agent what to do instead.
        """
        if name not in self.tool_names:
            if name in TOOLS:
                return ErrorResult(tool=name, error="ReadOnlyError",
                                   text=self._readonly_message(name))
            return ErrorResult(tool=name, error="UnknownTool",
                               text=f'unknown tool "{name}"; available: '
                                    f"{', '.join(self.tool_names)}")
        spec = TOOLS[name]
        try:
            if isinstance(arguments, str):
                args = spec.args.model_validate_json(arguments or "{}")
            else:
                args = spec.args.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            problems = describe(exc)
            return ErrorResult(tool=name, error="InvalidArguments",
                               text=f"invalid arguments for {name}: {problems}")
        method: Callable[..., Awaitable[ToolResult]] = getattr(self, name)
        try:
            return await method(**args.model_dump())
        except SandlotError as exc:
            return ErrorResult(tool=name, error=type(exc).__name__, text=str(exc))

    # ---- helpers --------------------------------------------------------------------------

    def _readonly_message(self, tool: str) -> str:
        return (f"{tool} is not available: this toolbox is read-only (readonly=True); "
                f"available tools: {', '.join(self.tool_names)}")

    def _mutating(self, tool: str) -> None:
        if self.readonly:
            raise ReadOnlyError(self._readonly_message(tool))

    async def containment(self) -> Containment:
        """`descriptor` (race-free file tools) or `path` (no python3 in the sandbox); see
        tools/safe_mode.py and adr/0007."""
        if self._containment is None:
            self._containment = await safe_mode.detect(self.sandbox, self.env)
        return self._containment

    async def _run(self, tool: str, script: str, args: list[str], *,
                   stdin: bytes | AsyncIterable[bytes] | None = None,
                   limit: int = 4 << 20) -> ScriptResult:
        op = _SAFE_OPS.get(script)
        if op is not None and self._containment != "path":
            script, args = safe_mode.LAUNCH, [safe_mode.HELPER_SOURCE, script, op, *args]
        result = await run_script(self.sandbox, script, args, name=tool, env=self.env,
                                  stdin=stdin, timeout=self.timeout, limit=limit)
        if op is not None and self._containment is None:
            if safe_mode.PATH_MODE_NOTE in result.stderr:
                self._containment = "path"
                safe_mode.warn(self.sandbox)
            else:
                self._containment = "descriptor"
        if result.timed_out:
            raise ToolError(f"{tool} timed out after {self.timeout:g}s in the sandbox; "
                            "narrow the path or pattern")
        return result

    def _fail(self, tool: str, result: ScriptResult, ws: Workspace, path: str,
              target: str) -> SandlotError:
        """The typed error for a script's exit code, in words an agent can act on."""
        code = result.exit_code
        detail = result.detail
        rel = ws.relative(target)
        where = f'workspace "{ws.name}"'
        if code == scripts.Exit.ROOT_MISSING:
            return WorkspaceError(
                f'workspace "{ws.name}" root {ws.root} does not exist in the sandbox (or is '
                "not a directory); create it or mount the workspace first"
            )
        if code == scripts.Exit.ESCAPES:
            return PathOutsideWorkspaceError(
                f'path "{path}" resolves through a symlink to {detail}, which is outside '
                f"{where} (root {ws.root}); symlinks may not lead out of the workspace"
            )
        if code == scripts.Exit.UNRESOLVABLE:
            return ToolError(f"{tool}: cannot resolve {rel} in {where}: {detail} cannot be "
                             "entered, or is a symlink whose target cannot be read")
        if code == scripts.Exit.NOT_FOUND:
            return ToolError(f"{tool}: {rel} does not exist in {where}; check the path "
                             "(glob lists files)")
        if code == scripts.Exit.NOT_A_DIRECTORY:
            return ToolError(f"{tool}: {rel} is not a directory in {where} (a component of "
                             "the path is a file)")
        if code == scripts.Exit.IS_A_DIRECTORY:
            return ToolError(f"{tool}: {rel} is a directory in {where}; name a file (glob "
                             "lists a directory's files)")
        if code == scripts.Exit.NOT_A_FILE:
            return ToolError(f"{tool}: {rel} is not a regular file (a device, FIFO or "
                             "socket); it cannot be read or written as text")
        if code == scripts.Exit.BINARY:
            return ToolError(f"{tool}: {rel} is a binary file ({detail} bytes) and cannot be "
                             "shown as text; inspect it with bash (e.g. `file` or "
                             "`od -c | head`)")
        if code == scripts.Exit.EXISTS_NOT_READ:
            return NotReadError(f"{tool}: {rel} already exists in {where} and has not been "
                                "read; read it first, then write it (this keeps changes you "
                                "have not seen from being overwritten)")
        if code == scripts.Exit.CHANGED:
            return NotReadError(f"{tool}: {rel} changed in {where} since it was read; read "
                                "it again and redo the edit")
        if code == scripts.Exit.MKDIR_FAILED:
            return ToolError(f"{tool}: cannot create the directory for {rel} in {where}; a "
                             "component of the path may be a file")
        if code == scripts.Exit.WRITE_FAILED:
            return ToolError(f"{tool}: cannot write {rel} in {where} ({result.stderr.strip()})"
                             "; the file was left as it was")
        if code == scripts.Exit.TOO_LARGE:
            return ToolError(f"{tool}: {rel} is {detail} bytes, over the {self.edit_bytes}-"
                             "byte limit for edit; change it with bash (e.g. sed) instead")
        stderr = result.stderr.strip() or "no error output"
        return ToolError(f"{tool} failed in the sandbox (exit {code}) for {rel} in {where}: "
                         f"{stderr}")

    def _target(self, path: str | None, workspace: str | None) -> tuple[Workspace, str]:
        ws = self.workspaces.choose(workspace)
        return ws, ws.contain(path or "")

    def _cut_line(self, text: str) -> tuple[str, bool]:
        if len(text) <= self.max_line_chars:
            return text, False
        return text[: self.max_line_chars] + f" …[line cut at {self.max_line_chars} chars]", True

    # ---- file tools -----------------------------------------------------------------------

    async def read(self, path: str, offset: int | None = None, limit: int | None = None, *,
                   workspace: str | None = None) -> ReadResult:
        """Numbered lines of a text file; `offset` (1-based line) and `limit` page it."""
        if not path:
            raise ToolError("read: path is empty; name a file (glob lists files)")
        ws, target = self._target(path, workspace)
        start = max(offset or 1, 1)
        count = limit if limit is not None else self.read_lines
        if count < 1:
            raise ToolError(f"read: limit must be at least 1, got {count}")
        result = await self._run("read", scripts.READ,
                                 [ws.root, target, str(start), str(count), str(self.read_bytes)],
                                 limit=self.read_bytes + 4096)
        if result.exit_code != 0:
            raise self._fail("read", result, ws, path, target)
        header, _, body = result.stdout.partition(b"\n")
        size, total = (int(x) for x in header.split())
        byte_cut = len(body) >= self.read_bytes
        lines = body.decode("utf-8", "replace").split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if byte_cut and len(lines) > 1:
            lines.pop()  # the page ends mid-line; the next page starts with it whole
        self.tracker.mark(target)
        rel = ws.relative(target)
        shown: list[str] = []
        cut_lines = 0
        for number, line in enumerate(lines, start):
            text, was_cut = self._cut_line(line)
            cut_lines += was_cut
            shown.append(f"{number:>6}\t{text}")
        end = start + len(lines) - 1
        more = end < total
        notes: list[str] = []
        if total == 0:
            notes.append(f"({rel} is empty)")
        elif start > total:
            notes.append(f"({rel} has {_count(total, 'line')}; offset {start} is past its end)")
        elif more:
            notes.append(f"[lines {start}-{end} of {total}; read on with offset={end + 1}]")
        text = "\n".join(shown + notes)
        return ReadResult(tool="read", text=text, workspace=ws.name, path=rel, size=size,
                          total_lines=total, start_line=start, end_line=max(end, start - 1),
                          more=more, cut_lines=cut_lines)

    async def write(self, path: str, content: str, *,
                    workspace: str | None = None) -> WriteResult:
        """Write the whole file atomically; an existing file must have been read first."""
        self._mutating("write")
        if not path:
            raise ToolError("write: path is empty; name the file to write")
        ws, target = self._target(path, workspace)
        data = _encode(content, "write")
        mode = "any" if target in self.tracker else "new"
        result = await self._write_bytes("write", ws, target, mode, "", data)
        if result.exit_code != 0:
            raise self._fail("write", result, ws, path, target)
        existed, written = result.stdout.split()[:2]
        self.tracker.mark(target)
        rel = ws.relative(target)
        created = existed == b"0"
        verb = "Created" if created else "Wrote"
        return WriteResult(tool="write", text=f"{verb} {rel} in workspace {ws.name} "
                           f"({_count(int(written), 'byte')})", workspace=ws.name, path=rel,
                           bytes_written=int(written), created=created)

    async def edit(self, path: str, old: str, new: str, replace_all: bool = False, *,
                   workspace: str | None = None) -> EditResult:
        """Replace `old` (exactly once, or everywhere with `replace_all`) in a read file."""
        self._mutating("edit")
        if not old:
            raise ToolError("edit: old is empty; to create or replace a whole file use write")
        if old == new:
            raise ToolError("edit: old and new are identical; nothing would change")
        ws, target = self._target(path, workspace)
        rel = ws.relative(target)
        if target not in self.tracker:
            raise NotReadError(f'edit: {rel} has not been read in workspace "{ws.name}"; '
                               "read it first, then edit it")
        first = await self._run("edit", scripts.SLURP, [ws.root, target, str(self.edit_bytes)],
                                limit=self.edit_bytes + 4096)
        if first.exit_code != 0:
            raise self._fail("edit", first, ws, path, target)
        digest, _, body = first.stdout.partition(b"\n")
        content = body.decode("utf-8", "surrogateescape")
        count = content.count(old)
        if count == 0 and "\r\n" in content and "\n" in old and "\r\n" not in old:
            # The file uses CRLF line ends; the agent's text (from read) has bare LFs.
            old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
            count = content.count(old)
        if count == 0:
            raise EditMatchError(
                f"edit: old text not found in {rel} (0 matches); read the file again and copy "
                "the text exactly, including whitespace and indentation, without the "
                "line-number prefix", count=0)
        if count > 1 and not replace_all:
            raise EditMatchError(
                f"edit: old text matches {count} times in {rel}; include more surrounding "
                "lines to make it unique, or pass replace_all=true to change every one",
                count=count)
        updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
        second = await self._write_bytes("edit", ws, target, "any", digest.decode(),
                                         _encode(updated, "edit"))
        if second.exit_code != 0:
            raise self._fail("edit", second, ws, path, target)
        written = int(second.stdout.split()[1])
        replaced = count if replace_all else 1
        return EditResult(tool="edit", text=f"Edited {rel} in workspace {ws.name}: "
                          f"{_count(replaced, 'replacement')}", workspace=ws.name, path=rel,
                          replacements=replaced, bytes_written=written)

    async def _write_bytes(self, tool: str, ws: Workspace, target: str, mode: str,
                           digest: str, data: bytes | AsyncIterable[bytes]) -> ScriptResult:
        """The atomic write (temp file, then rename). If the write is interrupted -- timeout,
        cancellation, a lost connection -- its temp file is removed, so neither a half file
        nor litter stays behind; the target is untouched either way."""
        token = secrets.token_hex(8)
        try:
            result = await self._run(tool, scripts.WRITE,
                                     [ws.root, target, mode, digest, token], stdin=data)
        except BaseException:
            await self._discard(ws, target, token)
            raise
        if result.exit_code not in (0, *scripts.Exit):
            await self._discard(ws, target, token)  # killed mid-write (e.g. by a signal)
        return result

    async def _discard(self, ws: Workspace, target: str, token: str) -> None:
        with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
            await self._run("write-cleanup", scripts.DISCARD, [ws.root, target, token])

    async def glob(self, pattern: str, path: str | None = None, *,
                   workspace: str | None = None) -> GlobResult:
        """Files matching `pattern`, relative to the workspace root, sorted by name."""
        ere = glob_to_ere(pattern)
        ws, base = self._target(path, workspace)
        result = await self._run("glob", scripts.GLOB,
                                 [ws.root, base, ere, str(SEARCH_BYTES + 1),
                                  "1" if self.use_ripgrep else "0", "/".join(self.exclude_dirs)],
                                 limit=SEARCH_BYTES)
        if result.exit_code != 0:
            raise self._fail("glob", result, ws, path or ".", base)
        listing = parse_listing(result.stdout, self.max_results)
        prefix = ws.relative(base)
        paths = [p if prefix == "." else f"{prefix}/{p}" for p in listing.paths]
        total = len(paths) + listing.cut
        lines = list(paths) or [f"(no files match {pattern!r} in {prefix})"]
        more = "more than " if result.truncated else ""
        if listing.cut or result.truncated:
            lines.append(f"[showing the first {len(paths)} of {more}{total} files by name; "
                         "narrow the pattern or the path]")
        engine: Literal["rg", "find"] = "rg" if listing.engine == "rg" else "find"
        return GlobResult(tool="glob", text="\n".join(lines), workspace=ws.name,
                          pattern=pattern, paths=paths, total=total,
                          truncated=bool(listing.cut) or result.truncated, engine=engine)

    async def grep(self, pattern: str, path: str | None = None, glob: str | None = None,
                   ignore_case: bool = False, context: int = 0, *,
                   workspace: str | None = None) -> GrepResult:
        """Lines matching the regex `pattern` (with `context` lines around), bounded."""
        if not pattern:
            raise ToolError("grep: pattern is empty; pass a regular expression")
        if context < 0:
            raise ToolError(f"grep: context must be 0 or more, got {context}")
        selector = glob_to_ere(glob) if glob else ""
        ws, target = self._target(path, workspace)
        result = await self._run("grep", scripts.GREP, [
            ws.root, target, pattern, pcre_to_ere(pattern), selector,
            "i" if ignore_case else "", str(context), str(SEARCH_BYTES + 1),
            "1" if self.use_ripgrep else "0", "/".join(self.exclude_dirs)], limit=SEARCH_BYTES)
        if result.exit_code == scripts.Exit.BAD_PATTERN:
            raise ToolError(f"grep: invalid regular expression {pattern!r}: "
                            f"{' '.join(result.stderr.split())}")
        if result.exit_code != 0:
            raise self._fail("grep", result, ws, path or ".", target)
        search = parse_search(result.stdout, self.max_results)
        rel = ws.relative(target)
        if search.kind == "file":
            lines = [ln.model_copy(update={"path": rel}) for ln in search.lines]
            binary = [rel] if search.binary_files else []
        else:
            def under(p: str) -> str:
                return p if rel == "." else posixpath.join(rel, p)
            lines = [ln.model_copy(update={"path": under(ln.path)}) for ln in search.lines]
            binary = [under(p) for p in search.binary_files]
        lines = [ln.model_copy(update={"text": self._cut_line(ln.text)[0]}) for ln in lines]
        files = list(dict.fromkeys(ln.path for ln in lines if ln.match))
        truncated = bool(search.cut) or result.truncated
        text = _render_grep(lines, context)
        notes: list[str] = []
        if not lines:
            notes.append(f"(no matches for {pattern!r} in {rel})")
        if binary:
            notes.append(f"[binary files match, not shown: {', '.join(binary)}]")
        if search.cut:
            notes.append(f"[{search.cut} more lines not shown; narrow the pattern, path or "
                         "glob]")
        elif result.truncated:
            notes.append("[output cut at its size limit; narrow the pattern, path or glob]")
        text = "\n".join([t for t in [text] if t] + notes)
        grep_engine: Literal["rg", "grep"] = "rg" if search.engine == "rg" else "grep"
        return GrepResult(tool="grep", text=text, workspace=ws.name, pattern=pattern,
                          lines=lines, files=files, binary_files=binary, truncated=truncated,
                          engine=grep_engine)

    # ---- verify tools (sandlot.verify, language detected in the chosen root) -------------

    async def run_tests(self, language: str | None = None, *,
                        workspace: str | None = None) -> VerifyResult:
        """sandlot.verify.run_tests in the chosen workspace."""
        self._mutating("run_tests")
        from .. import verify

        ws = self.workspaces.choose(workspace)
        report = await verify.run_tests(self.sandbox, language=language, workspace=ws.name,
                                        workspaces=self.workspaces, env=self.env or None)
        return VerifyResult(tool="run_tests", text=render_tests(report), workspace=ws.name,
                            passed=report.ok, report=report)

    async def run_lint(self, language: str | None = None, *,
                       workspace: str | None = None) -> VerifyResult:
        """sandlot.verify.run_lint in the chosen workspace."""
        self._mutating("run_lint")
        from .. import verify

        ws = self.workspaces.choose(workspace)
        report = await verify.run_lint(self.sandbox, language=language, workspace=ws.name,
                                       workspaces=self.workspaces, env=self.env or None)
        return VerifyResult(tool="run_lint", text=render_findings(report), workspace=ws.name,
                            passed=report.ok, report=report)

    async def run_typecheck(self, language: str | None = None, *,
                            workspace: str | None = None) -> VerifyResult:
        """sandlot.verify.run_typecheck in the chosen workspace."""
        self._mutating("run_typecheck")
        from .. import verify

        ws = self.workspaces.choose(workspace)
        report = await verify.run_typecheck(self.sandbox, language=language, workspace=ws.name,
                                            workspaces=self.workspaces, env=self.env or None)
        return VerifyResult(tool="run_typecheck", text=render_findings(report),
                            workspace=ws.name, passed=report.ok, report=report)

    async def run_failing_tests(self, language: str | None = None, *,
                                workspace: str | None = None) -> VerifyResult:
        """sandlot.verify.run_failing_tests: the last report's failures, in the chosen
        workspace."""
        self._mutating("run_failing_tests")
        from .. import verify

        ws = self.workspaces.choose(workspace)
        report = await verify.run_failing_tests(self.sandbox, language=language,
                                                workspace=ws.name, workspaces=self.workspaces,
                                                env=self.env or None)
        return VerifyResult(tool="run_failing_tests", text=render_tests(report),
                            workspace=ws.name, passed=report.ok, report=report)

    async def run_script(self, name: str, *, workspace: str | None = None) -> VerifyResult:
        """sandlot.verify.run_script (a package.json script) in the chosen workspace."""
        self._mutating("run_script")
        from .. import verify

        ws = self.workspaces.choose(workspace)
        result = await verify.run_script(self.sandbox, name, workspace=ws.name,
                                         workspaces=self.workspaces, env=self.env or None)
        return VerifyResult(tool="run_script", text=render_script(result), workspace=ws.name,
                            passed=result.ok, report=result)

    # ---- shell tools ----------------------------------------------------------------------

    async def bash(self, command: str, timeout: float | None = None, background: bool = False,
                   *, workspace: str | None = None,
                   idle_timeout: float | None = None) -> BashResult:
        """Run `command` with `sh -c` in the workspace root (foreground or background)."""
        self._mutating("bash")
        if not command or not command.strip():
            raise ToolError("bash: command is empty")
        for name, value in (("timeout", timeout), ("idle_timeout", idle_timeout)):
            if value is not None and value <= 0:
                raise ToolError(f"bash: {name} must be a positive number of seconds, got {value}")
        ws = self.workspaces.choose(workspace)
        if background:
            # A durable process: it survives a dropped connection, and a toolbox attached to
            # the same sandbox later finds it by its id.
            process = await self.sandbox.processes.start(
                command, cwd=ws.root, env=self.env, timeout=timeout, idle_timeout=idle_timeout)
            shell = self.shells.add(Shell(process, command, ws.name))
            return BashResult(
                tool="bash", workspace=ws.name, command=command, exit_code=None, stdout="",
                stderr="", shell_id=shell.id,
                text=f"Started background shell {shell.id} in workspace {ws.name}. Read its "
                     f'output with bash_output(shell_id="{shell.id}"); end it with '
                     f'kill_shell(shell_id="{shell.id}").')
        limit = timeout if timeout is not None else self.bash_timeout
        result = await self.sandbox.exec(command, cwd=ws.root, env=self.env, timeout=limit,
                                         idle_timeout=idle_timeout,
                                         max_output=self.bash_output_bytes,
                                         on_stdout=self.on_output, on_stderr=self.on_output)
        return BashResult(tool="bash", text=self._render_run(result, limit), workspace=ws.name,
                          command=command, exit_code=result.exit_code, stdout=result.stdout,
                          stderr=result.stderr, timed_out=result.timed_out,
                          truncated=result.truncated)

    async def run_code(self, code: str, mode: str | None = None,
                       requirements: list[str] | None = None,
                       timeout: float | None = None) -> RunCodeResult:
        """sandlot.modes.run_code: `code` in a fresh file, run in its runtime mode."""
        self._mutating("run_code")
        from .. import modes

        limit = timeout if timeout is not None else self.bash_timeout
        result = await modes.run_code(self.sandbox, code, mode, requirements or (), limit,
                                      env=self.env, max_output=self.bash_output_bytes,
                                      on_stdout=self.on_output, on_stderr=self.on_output)
        text = self._render_run(result, limit)
        if result.notes:
            text += "\n" + "\n".join(f"[note: {note}]" for note in result.notes)
        return RunCodeResult(tool="run_code", text=text, mode=result.mode,
                             exit_code=result.exit_code, stdout=result.stdout,
                             stderr=result.stderr, timed_out=result.timed_out,
                             truncated=result.truncated, notes=list(result.notes))

    def _render_run(self, result: ExecResult, limit: float) -> str:
        """A finished command as the model reads it: output tails, then how it ended."""
        parts: list[str] = []
        if result.stdout_truncated:
            parts.append(f"[stdout cut: showing its last {self.bash_output_bytes} bytes]")
        if result.stdout:
            parts.append(result.stdout.rstrip("\n"))
        if result.stderr:
            if result.stderr_truncated:
                parts.append(f"[stderr cut: showing its last {self.bash_output_bytes} bytes]")
            parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
        if result.timed_out_by == "idle_timeout":
            parts.append("[no output for its idle_timeout; the command and everything it "
                         "started were ended]")
        elif result.timed_out:
            parts.append(f"[timed out after {limit:g}s; the command and everything it started "
                         "were ended]")
        else:
            parts.append(f"[exit code {result.exit_code}]")
        return "\n".join(parts)

    async def _shell(self, tool: str, shell_id: str) -> Shell:
        if not isinstance(shell_id, str):
            raise ToolError(f"{tool}: shell_id must be a string")
        shell = self.shells.get(shell_id)
        if shell is not None:
            return shell
        try:  # started by another toolbox on this sandbox (before a restart, say)
            process = await self.sandbox.processes.get(shell_id)
            info = await process.info()
        except ProcessNotFoundError:
            raise ToolError(f'{tool}: no background shell "{shell_id.strip()}"; known shells: '
                            f"{_quote_list(self.shells.ids)}") from None
        return self.shells.add(Shell(process, info.command, ""))

    async def bash_output(self, shell_id: str) -> BashOutputResult:
        """What a background shell printed since the last call, and whether it still runs."""
        self._mutating("bash_output")
        shell = await self._shell("bash_output", shell_id)
        chunk = await shell.process.read(shell.cursor, max_bytes=self.bash_output_bytes)
        shell.cursor = chunk.next
        more = chunk.next < chunk.info.output_bytes
        output = shell.decoder.decode(chunk.data, final=chunk.complete)
        status = shell.status(chunk.info)
        code = chunk.info.exit_code
        lines = [output.rstrip("\n")] if output else ["(no new output)"]
        if chunk.dropped:
            lines.insert(0, f"[{chunk.dropped} earlier bytes dropped: the shell's output files "
                            "keep only its newest output]")
        if more:
            lines.append("[more output is waiting: call bash_output again]")
        tail = f", exit code {code}" if code is not None else ""
        lines.append(f"[shell {shell.id}: {status}{tail}]")
        return BashOutputResult(tool="bash_output", text="\n".join(lines), shell_id=shell.id,
                                status=status, exit_code=code, output=output,
                                dropped_bytes=chunk.dropped, more=more)

    async def kill_shell(self, shell_id: str) -> KillShellResult:
        """End a background shell's whole process tree (harmless if it already ended)."""
        self._mutating("kill_shell")
        shell = await self._shell("kill_shell", shell_id)
        info = await shell.process.info()
        if info.running:
            shell.killed = True
            info = await shell.process.kill()
        status = shell.status(info)
        return KillShellResult(tool="kill_shell", shell_id=shell.id, status=status,
                               exit_code=info.exit_code,
                               text=f"Shell {shell.id} {status} (exit code {info.exit_code})")

    # ---- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """End every background shell this toolbox knows that still runs (the sandbox itself
        stays open)."""
        for shell in self.shells.all():
            if (await shell.process.info()).running:
                shell.killed = True
                await shell.process.kill()

    async def __aenter__(self) -> Toolbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _encode(content: str, tool: str) -> bytes:
    if not isinstance(content, str):
        raise ToolError(f"{tool}: content must be a string, got {type(content).__name__}")
    try:
        return content.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{tool}: content cannot be encoded as UTF-8 ({exc.reason})") from None


def _render_grep(lines: list[GrepLine], context: int) -> str:
    out: list[str] = []
    prev: GrepLine | None = None
    for ln in lines:
        # "--" parts groups of context lines; without context every line is its own match and
        # a separator would only spend the reader's tokens.
        if context and prev is not None and (ln.path != prev.path or ln.line != prev.line + 1):
            out.append("--")
        sep = ":" if ln.match else "-"
        out.append(f"{ln.path}{sep}{ln.line}{sep}{ln.text}")
        prev = ln
    return "\n".join(out)


def _strip_titles(schema: Any) -> Any:
    """Drop pydantic's generated `title`s: noise in a tool schema a model reads."""
    if isinstance(schema, dict):
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


def dumps_schemas(toolbox: Toolbox) -> str:
    """The tool schemas as pretty JSON (handy for docs and for eyeballing)."""
    return json.dumps(toolbox.tool_schemas(), indent=2, ensure_ascii=False)
