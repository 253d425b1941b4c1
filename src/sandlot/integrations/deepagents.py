"""A Deep Agents sandbox backend over any sandlot `Sandbox` (extra `sandlot[deepagents]`).

    from sandlot.integrations.deepagents import SandlotProvider

    with SandlotProvider({"type": "local"}) as provider:
        backend = provider.get_or_create()        # a deepagents SandboxBackendProtocol
        backend.write(f"{backend.root}/hello.txt", "hi")
        print(backend.execute("cat hello.txt").output)

Deep Agents' protocol is synchronous with async variants (run in a worker thread). A sandlot
sandbox lives on one event loop, so the backend sends every call to that loop through an anyio
blocking portal: the provider runs its own, or pass the portal of the loop that owns the
sandbox to `SandlotBackend`.

The file operations do not use the framework's shell-script fallbacks: they go through the
toolbox's race-free path (tools/safe_helper.py: every path walked from the root descriptor,
symlinks followed by hand and refused when they lead out), so a path outside the backend's
root, or a symlink the sandbox's own commands planted, gives the framework's error result and
never reaches a file outside. Paths are absolute, as the framework passes them, and must lie
under `root` (the sandbox's worktree unless given). See adr/0041.
"""

from __future__ import annotations

import base64
import contextlib
import posixpath
import re
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any, TypeVar

from anyio.from_thread import BlockingPortal, start_blocking_portal
from deepagents.backends.protocol import (
    EditResult,
    ExecuteResponse,
    FileData,
    FileDownloadResponse,
    FileInfo,
    FileUploadResponse,
    GlobResult,
    GrepMatch,
    GrepResult,
    LsResult,
    ReadResult,
    SandboxBackendProtocol,
    WriteResult,
)
from deepagents.backends.utils import _get_backend_read_file_type, normalize_read_bounds

from ..config import provider_from_config
from ..errors import (
    EditMatchError,
    InvalidPathError,
    NotReadError,
    PathOutsideWorkspaceError,
    SandlotError,
)
from ..provider import IsolatedSandboxProvider
from ..sandbox import Sandbox
from ..tools import Toolbox
from ..tools import scripts as _scripts
from ..tools.file_tools import SEARCH_BYTES
from ..tools.patterns import glob_to_ere
from ..workspaces import Workspace

__all__ = ["SandlotBackend", "SandlotProvider"]

T = TypeVar("T")

#: The framework's read limits (deepagents.backends.sandbox: MAX_BINARY_BYTES, MAX_OUTPUT_BYTES).
MAX_BINARY_BYTES = 500 * 1024
MAX_TEXT_PAGE_BYTES = 500 * 1024
_TRUNCATION_MSG = (
    "\n\n[Output was truncated due to size limits. This paginated read result exceeded the "
    "sandbox stdout limit. Continue reading with a larger offset or smaller limit to inspect "
    "the rest of the file.]"
)
_EMPTY_FILE = "System reminder: File exists but has empty contents"
#: Largest file read, edited or downloaded whole (uploads have no bound of ours).
FILE_BYTES = 64 << 20
#: The framework's default command timeout (deepagents LocalShellBackend), in seconds.
DEFAULT_TIMEOUT = 120

_Exit = _scripts.Exit
#: Our exit codes as the framework's per-file error codes (upload_files / download_files).
_FILE_CODES: dict[int, str] = {
    _Exit.NOT_FOUND: "file_not_found",
    _Exit.IS_A_DIRECTORY: "is_directory",
    _Exit.PERMISSION_DENIED: "permission_denied",
    _Exit.ESCAPES: "invalid_path",
    _Exit.NOT_A_DIRECTORY: "invalid_path",
    _Exit.UNRESOLVABLE: "invalid_path",
    _Exit.NOT_A_FILE: "invalid_path",
    _Exit.MKDIR_FAILED: "invalid_path",
    _Exit.WRITE_FAILED: "permission_denied",
}


class _Refused(Exception):
    """An operation refused before or in the sandbox: `code` is the framework's error code,
    `message` the words for an agent."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _gone(exc: SandlotError) -> _Refused:
    """A failure of the sandbox itself (closed, vanished, timed out) as an operation's error:
    the framework gets its result shape, with sandlot's words as the backend-specific code."""
    return _Refused(f"sandbox error: {exc}", f"sandbox error: {exc}")


class SandlotBackend(SandboxBackendProtocol):
    """Deep Agents' `SandboxBackendProtocol` over a sandlot `Sandbox`.

    `portal` runs calls on the event loop that owns `sandbox`. `root` bounds every file path
    (default: the sandbox's worktree); `timeout` is `execute`'s default in seconds.
    """

    def __init__(self, sandbox: Sandbox, portal: BlockingPortal, *, root: str | None = None,
                 timeout: int = DEFAULT_TIMEOUT, sandbox_id: str | None = None) -> None:
        if timeout <= 0:
            raise InvalidPathError(f"timeout must be positive, got {timeout}")
        self.sandbox = sandbox
        self.root = root or sandbox.worktree
        self.timeout = timeout
        self._portal = portal
        self._id = sandbox_id or sandbox.name
        # write/edit here are the framework's, with its own rules (write refuses an existing
        # file, edit needs no read first): the toolbox's read-tracker is not ours to satisfy,
        # so the backend calls the toolbox's lower-level, contained operations directly.
        # No post-edit feedback: the framework's write and edit results have no place for it.
        self._box = Toolbox(sandbox, {"root": self.root}, timeout=300.0, feedback=False)

    def __repr__(self) -> str:
        return f"<SandlotBackend {self._id!r} root={self.root!r} on {self.sandbox!r}>"

    @property
    def id(self) -> str:
        return self._id

    def _call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        # Every answer goes to the model: each secret the sandbox was given is scrubbed from
        # its text (file bytes a download hands over are left as they are).
        return self.sandbox.secrets.scrubber.value(self._portal.call(fn, *args), data=False)

    # ---- paths and the contained operations -------------------------------------------

    def _contain(self, path: str) -> tuple[Workspace, str]:
        if not isinstance(path, str) or not path.startswith("/"):
            raise _Refused("invalid_path", f"path {path!r} is not absolute; give an absolute "
                           f"path under {self.root}")
        try:
            return self._box._target(path, None)
        except (PathOutsideWorkspaceError, InvalidPathError) as exc:
            raise _Refused("invalid_path", str(exc)) from None

    async def _script(self, tool: str, script: str, ws: Workspace, target: str,
                      *args: str, limit: int = 4 << 20) -> bytes:
        try:
            result = await self._box._run(tool, script, [ws.root, target, *args], limit=limit)
        except SandlotError as exc:
            raise _gone(exc) from None
        if result.exit_code != 0:
            error = self._box._fail(tool, result, ws, target, target)
            raise _Refused(_FILE_CODES.get(result.exit_code, "invalid_path"), str(error))
        return result.stdout

    async def _fetch(self, path: str) -> bytes:
        ws, target = self._contain(path)
        return await self._script("read", _scripts.FETCH, ws, target, str(FILE_BYTES),
                                  limit=FILE_BYTES + 4096)

    async def _put(self, path: str, data: bytes, mode: str, digest: str = "") -> None:
        ws, target = self._contain(path)
        try:
            result = await self._box._write_bytes("write", ws, target, mode, digest, data)
        except SandlotError as exc:
            raise _gone(exc) from None
        if result.exit_code == _Exit.EXISTS_NOT_READ:
            raise _Refused("invalid_path", f"Cannot write to {path} because it already exists. "
                           "Read and then make an edit, or write to a new path.")
        if result.exit_code != 0:
            error = self._box._fail("write", result, ws, target, target)
            raise _Refused(_FILE_CODES.get(result.exit_code, "invalid_path"), str(error))

    # ---- execute ------------------------------------------------------------------------

    def execute(self, command: str, *, timeout: int | None = None) -> ExecuteResponse:
        return self._call(self._aexecute, command, timeout)

    async def _aexecute(self, command: str, timeout: int | None) -> ExecuteResponse:
        limit = self.timeout if timeout is None else timeout
        try:
            # 0 means no timeout, as the framework allows.
            result = await self.sandbox.exec(command, timeout=limit or None, scrub=True)
        except SandlotError as exc:
            return ExecuteResponse(output=f"Error: {exc}", exit_code=None)
        if result.timed_out:
            how = " (custom timeout)" if timeout is not None else ""
            return ExecuteResponse(
                output=f"Error: Command timed out after {limit} seconds{how}. The command may "
                "be stuck or require more time; re-run it with a larger timeout.",
                exit_code=124)
        parts = [result.stdout] if result.stdout else []
        if result.stderr:
            parts.extend(f"[stderr] {line}" for line in result.stderr.strip().split("\n"))
        output = "\n".join(parts) if parts else "<no output>"
        if result.exit_code != 0:
            output = f"{output.rstrip()}\n\nExit code: {result.exit_code}"
        truncated = result.stdout_truncated or result.stderr_truncated
        return ExecuteResponse(output=output, exit_code=result.exit_code, truncated=truncated)

    # ---- read, write, edit --------------------------------------------------------------

    def read(self, file_path: str, offset: int = 0, limit: int = 2000) -> ReadResult:
        return self._call(self._aread, file_path, offset, limit)

    async def _aread(self, file_path: str, offset: int, limit: int) -> ReadResult:
        try:
            data = await self._fetch(file_path)
        except _Refused as exc:
            code = "file_not_found" if exc.code == "file_not_found" else exc.message
            return ReadResult(error=f"File '{file_path}': {code}")
        return _page(file_path, data, offset, limit)

    def write(self, file_path: str, content: str) -> WriteResult:
        return self._call(self._awrite, file_path, content)

    async def _awrite(self, file_path: str, content: str) -> WriteResult:
        try:
            await self._put(file_path, content.encode("utf-8", "surrogateescape"), "new")
        except _Refused as exc:
            return WriteResult(error=exc.message)
        return WriteResult(path=file_path)

    def edit(self, file_path: str, old_string: str, new_string: str,
             replace_all: bool = False) -> EditResult:
        return self._call(self._aedit, file_path, old_string, new_string, replace_all)

    async def _aedit(self, file_path: str, old: str, new: str, replace_all: bool) -> EditResult:
        try:
            ws, target = self._contain(file_path)
            raw = await self._script("edit", _scripts.SLURP, ws, target, str(FILE_BYTES),
                                     limit=FILE_BYTES + 4096)
            digest, _, body = raw.partition(b"\n")
            content = body.decode("utf-8", "surrogateescape")
            count = content.count(old) if old else 0
            if count == 0:
                return EditResult(error=f"Error: String not found in file: '{old}'")
            if count > 1 and not replace_all:
                return EditResult(error=f"Error: String '{old}' appears multiple times "
                                  f"({count}) in the file. Use replace_all=True to replace all "
                                  "occurrences, or provide a more specific string with "
                                  "surrounding context.")
            updated = content.replace(old, new) if replace_all else content.replace(old, new, 1)
            await self._put(file_path, updated.encode("utf-8", "surrogateescape"), "any",
                            digest.decode())
        except _Refused as exc:
            if exc.code == "file_not_found":
                return EditResult(error=f"Error: File '{file_path}' not found")
            return EditResult(error=f"Error: {exc.message}")
        except (EditMatchError, NotReadError) as exc:  # changed by another process meanwhile
            return EditResult(error=f"Error: {exc}")
        return EditResult(path=file_path, occurrences=count if replace_all else 1)

    # ---- listings and searches ----------------------------------------------------------

    def ls(self, path: str) -> LsResult:
        return self._call(self._als, path)

    async def _listing(self, path: str, shallow: bool) -> list[FileInfo]:
        ws, target = self._contain(path)
        raw = await self._script("ls", _scripts.LIST, ws, target, "1" if shallow else "0",
                                 str(SEARCH_BYTES), limit=SEARCH_BYTES)
        base = path.rstrip("/") or "/"
        out: list[FileInfo] = []
        is_dir = False
        for item in raw.split(b"\0"):
            if item in (b"\x1ed", b"\x1ef"):
                is_dir = item == b"\x1ed"
            elif item.startswith(b"./"):
                name = item[2:].decode("utf-8", "surrogateescape")
                out.append({"path": posixpath.join(base, name), "is_dir": is_dir})
        return out

    async def _als(self, path: str) -> LsResult:
        try:
            return LsResult(entries=await self._listing(path, shallow=True))
        except _Refused as exc:
            return LsResult(error=f"Path '{path}': {exc.message}")

    def glob(self, pattern: str, path: str | None = None) -> GlobResult:
        return self._call(self._aglob, pattern, path)

    async def _aglob(self, pattern: str, path: str | None) -> GlobResult:
        base = path or self.root
        try:
            # The toolbox's glob dialect, anchored at the search directory as the framework's
            # is (`*.py` is the directory's own files; `**/*.py` every depth).
            matcher = re.compile(glob_to_ere(pattern if "/" in pattern else f"./{pattern}"))
            entries = await self._listing(base, shallow="**" not in pattern and "/" not in pattern)
        except _Refused as exc:
            return GlobResult(error=f"Path '{base}': {exc.message}")
        except SandlotError as exc:
            return GlobResult(error=str(exc))
        prefix = base.rstrip("/") + "/"
        matches: list[FileInfo] = []
        for entry in entries:
            rel = entry["path"][len(prefix):]
            if matcher.fullmatch(rel):
                matches.append({"path": rel, "is_dir": entry.get("is_dir", False)})
        return GlobResult(matches=sorted(matches, key=lambda m: m["path"]))

    def grep(self, pattern: str, path: str | None = None, glob: str | None = None, *,
             max_count: int | None = None) -> GrepResult:
        return self._call(self._agrep, pattern, path, glob, max_count)

    async def _agrep(self, pattern: str, path: str | None, glob: str | None,
                     max_count: int | None) -> GrepResult:
        base = path or self.root
        try:
            self._contain(base)
            # The framework's grep is literal: the toolbox's is a regex, so escape it.
            found = await self._box.grep(_literal(pattern), base, glob)
        except _Refused as exc:
            return GrepResult(error=f"Path '{base}': {exc.message}")
        except SandlotError as exc:
            return GrepResult(error=str(exc))
        root = self.root.rstrip("/")
        # The file filter is checked here again, whatever the sandbox's grep made of it.
        chosen = re.compile(glob_to_ere(glob)) if glob else None
        start = posixpath.relpath(posixpath.normpath(base), root)
        matches: list[GrepMatch] = [
            {"path": posixpath.normpath(f"{root}/{ln.path}"), "line": ln.line, "text": ln.text}
            for ln in found.lines if ln.match and (
                chosen is None or chosen.fullmatch(posixpath.relpath(ln.path, start)))]
        truncated = found.truncated
        if max_count is not None and len(matches) > max_count:
            matches, truncated = matches[:max_count], True
        return GrepResult(matches=matches, truncated=truncated)

    # ---- uploads and downloads ----------------------------------------------------------

    def upload_files(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        return self._call(self._aupload, files)

    async def _aupload(self, files: list[tuple[str, bytes]]) -> list[FileUploadResponse]:
        # One toolbox call per batch (not per file): each file still written atomically on
        # the race-free path, a refused one reported with its code while the rest go on.
        codes: list[str | None] = [None] * len(files)
        pending: list[tuple[int, str, bytes]] = []
        ws: Workspace | None = None
        for index, (path, data) in enumerate(files):
            try:
                ws, target = self._contain(path)
            except _Refused as exc:
                codes[index] = exc.code
            else:
                pending.append((index, target, bytes(data)))
        for batch in _batches(pending):
            assert ws is not None
            try:
                written = await self._box._write_many("upload", ws,
                                                      [(t, d, None) for _, t, d in batch])
            except SandlotError as exc:
                gone = _gone(exc).code
                for index, _, _ in batch:
                    codes[index] = gone
                continue
            for (index, _, _), code in zip(batch, written, strict=True):
                if code is None:
                    codes[index] = "sandbox error: the upload ended before this file"
                elif code != 0:
                    codes[index] = _FILE_CODES.get(code, "invalid_path")
        return [FileUploadResponse(path=path, error=code)
                for (path, _), code in zip(files, codes, strict=True)]

    def download_files(self, paths: list[str]) -> list[FileDownloadResponse]:
        return self._call(self._adownload, paths)

    async def _adownload(self, paths: list[str]) -> list[FileDownloadResponse]:
        out: list[FileDownloadResponse] = []
        for path in paths:
            try:
                data = await self._fetch(path)
            except _Refused as exc:
                out.append(FileDownloadResponse(path=path, content=None, error=exc.code))
            else:
                out.append(FileDownloadResponse(path=path, content=data, error=None))
        return out


#: One upload call carries at most this many files or bytes (the frames are held in memory).
_BATCH_FILES = 2000
_BATCH_BYTES = 32 << 20


def _batches(items: list[tuple[int, str, bytes]]) -> Iterator[list[tuple[int, str, bytes]]]:
    batch: list[tuple[int, str, bytes]] = []
    size = 0
    for item in items:
        if batch and (len(batch) >= _BATCH_FILES or size + len(item[2]) > _BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(item)
        size += len(item[2])
    if batch:
        yield batch


_SPECIAL = re.compile(r"([.^$*+?()\[\]{}|\\])")


def _literal(text: str) -> str:
    """`text` as a regex matching itself, in the syntax rg and (through pcre_to_ere) grep -E
    both read: only the metacharacters are escaped (rg refuses escaped spaces and letters)."""
    return _SPECIAL.sub(r"\\\1", text)


def _page(file_path: str, data: bytes, offset: int, limit: int) -> ReadResult:
    """The framework's read result for a file's bytes (deepagents' read script, in Python)."""
    if not data:
        return ReadResult(file_data=FileData(content=_EMPTY_FILE, encoding="utf-8"))
    binary = _get_backend_read_file_type(file_path) != "text"
    if not binary:
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            binary = True
    if binary:
        if len(data) > MAX_BINARY_BYTES:
            return ReadResult(error=f"File '{file_path}': Binary file exceeds maximum preview "
                              f"size of {MAX_BINARY_BYTES} bytes")
        return ReadResult(file_data=FileData(content=base64.b64encode(data).decode("ascii"),
                                             encoding="base64"))
    offset, limit = normalize_read_bounds(offset, limit)
    if limit <= 0:
        return ReadResult(file_data=FileData(content="", encoding="utf-8"),
                          no_lines_requested=True)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    total = len(lines)
    if offset >= total:
        return ReadResult(error=f"File '{file_path}': Line offset {offset} exceeds file length "
                          f"({total} lines)")
    budget = MAX_TEXT_PAGE_BYTES - len(_TRUNCATION_MSG.encode())
    parts: list[str] = []
    used = 0
    truncated = False
    for line in lines[offset:offset + limit]:
        piece = line if not parts else "\n" + line
        size = len(piece.encode())
        if used + size > budget:
            truncated = True
            cut = piece.encode()[:budget - used].decode("utf-8", "ignore")
            shown = len(parts)
            if cut:
                parts.append(cut)
            break
        parts.append(piece)
        used += size
    returned = len(parts) if not truncated else max(shown, 1)
    end = offset + returned
    content = "".join(parts) + (_TRUNCATION_MSG if truncated else "")
    return ReadResult(file_data=FileData(content=content, encoding="utf-8"), total_lines=total,
                      start_line=offset + 1, end_line=end,
                      next_offset=end if end < total else None)


class SandlotProvider:
    """Sandboxes for Deep Agents from a sandlot provider configuration (the JSON of
    `--provider-config`), following the framework's provider pattern: `get_or_create`,
    `delete` by id, `close`. It runs its own event loop thread (an anyio blocking portal)
    that owns every sandbox it made.

        with SandlotProvider({"type": "docker", "image": "python:3.12"}) as provider:
            backend = provider.get_or_create()
    """

    def __init__(self, config: Mapping[str, Any] | str | IsolatedSandboxProvider, *,
                 root: str | None = None, timeout: int = DEFAULT_TIMEOUT,
                 portal: BlockingPortal | None = None) -> None:
        # Configuration errors surface here, before a thread or a sandbox exists.
        self._provider = (config if isinstance(config, IsolatedSandboxProvider)
                          else provider_from_config(dict(config) if isinstance(config, Mapping)
                                                    else config))
        self._root = root
        self._timeout = timeout
        self._stack = contextlib.ExitStack()
        # A given portal is the loop that owns `config` (a provider made there); not ours to end.
        self._portal: BlockingPortal | None = portal
        self._own_portal = portal is None
        self._backends: dict[str, SandlotBackend] = {}

    def _started(self) -> BlockingPortal:
        if self._portal is None:
            self._portal = self._stack.enter_context(start_blocking_portal("asyncio"))
        return self._portal

    def create(self) -> SandlotBackend:
        """A new sandbox, as a backend whose `id` names it for `get` and `delete`."""
        portal = self._started()
        sandbox = portal.call(self._provider.create)
        sandbox_id = f"{sandbox.name}-{uuid.uuid4().hex[:8]}"
        backend = SandlotBackend(sandbox, portal, root=self._root, timeout=self._timeout,
                                 sandbox_id=sandbox_id)
        self._backends[sandbox_id] = backend
        return backend

    def get_or_create(self, sandbox_id: str | None = None) -> SandlotBackend:
        """The sandbox `sandbox_id` this provider made, or a new one when None."""
        if sandbox_id is None:
            return self.create()
        try:
            return self._backends[sandbox_id]
        except KeyError:
            raise InvalidPathError(f"no sandbox with id {sandbox_id!r} in this provider; "
                                   "call get_or_create() without an id for a new one") from None

    def delete(self, sandbox_id: str) -> None:
        """Close the sandbox `sandbox_id` (its provider's `on_close` decides what stays)."""
        backend = self._backends.pop(sandbox_id, None)
        if backend is not None and self._portal is not None:
            self._portal.call(backend.sandbox.close)

    def ids(self) -> list[str]:
        return list(self._backends)

    def close(self) -> None:
        """Close every sandbox this provider made, then its event loop thread."""
        try:
            for sandbox_id in list(self._backends):
                self.delete(sandbox_id)
        finally:
            if self._own_portal:
                self._portal = None
            self._stack.close()

    def __enter__(self) -> SandlotProvider:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[SandlotBackend]:
        return iter(list(self._backends.values()))
