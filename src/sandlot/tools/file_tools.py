"""The file tools: read, write, edit, glob and grep, each one sandbox round trip (edit: two).

A tool script's exit code (scripts.Exit) becomes a typed error through `FAILURES`.
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
from collections.abc import AsyncIterable
from typing import Literal

import anyio

from ..errors import (
    EditMatchError,
    NotReadError,
    PathOutsideWorkspaceError,
    SandlotError,
    ToolError,
    WorkspaceError,
)
from ..workspaces import Workspace
from . import scripts
from .base import ToolboxBase
from .models import EditResult, GlobResult, GrepLine, GrepResult, ReadResult, WriteResult
from .parse import parse_listing, parse_search
from .patterns import glob_to_ere, pcre_to_ere
from .runner import ScriptResult

#: Bytes of a glob or grep listing brought back from the sandbox (cut there with head -c, so
#: the bound holds however long one line is); lines and paths are then counted and capped here.
SEARCH_BYTES = 8 << 20

#: Each exit code of ours, as the error an agent can act on. The message is formatted with
#: tool, rel (the path relative to the workspace root), where ('workspace "NAME"'), name and
#: root (the workspace's), path (as given), detail (the script's last stderr line), stderr and
#: edit_bytes. A code not listed is reported with the script's stderr.
FAILURES: dict[int, tuple[type[SandlotError], str]] = {
    scripts.Exit.ROOT_MISSING: (
        WorkspaceError, 'workspace "{name}" root {root} does not exist in the sandbox (or is '
        "not a directory); create it or mount the workspace first"),
    scripts.Exit.ESCAPES: (
        PathOutsideWorkspaceError, 'path "{path}" resolves through a symlink to {detail}, '
        "which is outside {where} (root {root}); symlinks may not lead out of the workspace"),
    scripts.Exit.UNRESOLVABLE: (
        ToolError, "{tool}: cannot resolve {rel} in {where}: {detail} cannot be entered, or is "
        "a symlink whose target cannot be read"),
    scripts.Exit.NOT_FOUND: (
        ToolError, "{tool}: {rel} does not exist in {where}; check the path (glob lists "
        "files)"),
    scripts.Exit.NOT_A_DIRECTORY: (
        ToolError, "{tool}: {rel} is not a directory in {where} (a component of the path is a "
        "file)"),
    scripts.Exit.IS_A_DIRECTORY: (
        ToolError, "{tool}: {rel} is a directory in {where}; name a file (glob lists a "
        "directory's files)"),
    scripts.Exit.NOT_A_FILE: (
        ToolError, "{tool}: {rel} is not a regular file (a device, FIFO or socket); it cannot "
        "be read or written as text"),
    scripts.Exit.BINARY: (
        ToolError, "{tool}: {rel} is a binary file ({detail} bytes) and cannot be shown as "
        "text; inspect it with bash (e.g. `file` or `od -c | head`)"),
    scripts.Exit.EXISTS_NOT_READ: (
        NotReadError, "{tool}: {rel} already exists in {where} and has not been read; read it "
        "first, then write it (this keeps changes you have not seen from being overwritten)"),
    scripts.Exit.CHANGED: (
        NotReadError, "{tool}: {rel} changed in {where} since it was read; read it again and "
        "redo the edit"),
    scripts.Exit.MKDIR_FAILED: (
        ToolError, "{tool}: cannot create the directory for {rel} in {where}; a component of "
        "the path may be a file"),
    scripts.Exit.WRITE_FAILED: (
        ToolError, "{tool}: cannot write {rel} in {where} ({stderr}); the file was left as it "
        "was"),
    scripts.Exit.PERMISSION_DENIED: (
        ToolError, "{tool}: {rel} in {where} may not be read (permission denied); change its "
        "mode with bash first"),
    scripts.Exit.TOO_LARGE: (
        ToolError, "{tool}: {rel} is {detail} bytes, over the {edit_bytes}-byte limit for "
        "edit; change it with bash (e.g. sed) instead"),
}


class FileTools(ToolboxBase):
    """Files in the workspaces: paged reads, atomic writes, exact edits, bounded searches."""

    def _fail(self, tool: str, result: ScriptResult, ws: Workspace, path: str,
              target: str) -> SandlotError:
        """The typed error for a script's exit code, in words an agent can act on."""
        code = result.exit_code
        rel = ws.relative(target)
        where = f'workspace "{ws.name}"'
        stderr = result.stderr.strip()
        known = FAILURES.get(code)
        if known is None:
            return ToolError(f"{tool} failed in the sandbox (exit {code}) for {rel} in {where}: "
                             f"{stderr or 'no error output'}")
        error, message = known
        return error(message.format(tool=tool, rel=rel, where=where, name=ws.name, root=ws.root,
                                    path=path, detail=result.detail, stderr=stderr,
                                    edit_bytes=self.edit_bytes))

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

    async def _slurp(self, tool: str, ws: Workspace, target: str) -> tuple[str, str]:
        """(digest, text) of a whole file, through the race-free helper: what sandlot.lsp
        gives a language server, and later checks a rename's write against."""
        result = await self._run(tool, scripts.SLURP, [ws.root, target, str(self.edit_bytes)],
                                 limit=self.edit_bytes + 4096)
        if result.exit_code != 0:
            raise self._fail(tool, result, ws, target, target)
        digest, _, body = result.stdout.partition(b"\n")
        return digest.decode(), body.decode("utf-8", "surrogateescape")

    async def _replace(self, tool: str, ws: Workspace, target: str, digest: str,
                       text: str) -> int:
        """Write `text` over a file whose content still has `digest` (else NotReadError:
        it changed meanwhile); atomic, like edit's write. Bytes written."""
        result = await self._write_bytes(tool, ws, target, "any", digest, _encode(text, tool))
        if result.exit_code != 0:
            raise self._fail(tool, result, ws, target, target)
        return int(result.stdout.split()[1])

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

    async def _write_many(self, tool: str, ws: Workspace,
                          files: list[tuple[str, bytes, int | None]]) -> list[int | None]:
        """Write many (contained, absolute) targets in ONE call: each file atomically as
        `_write_bytes` does, with its mode when one is given, refused ones skipped. One exit
        code per file (0: written; None: the call ended before reaching it, e.g. a lost
        connection)."""
        stream = _batch_tar(files)
        token = secrets.token_hex(8)
        result = await self._run(tool, scripts.WRITE_MANY, [ws.root, ws.root, token],
                                 stdin=stream, limit=8 * len(files) + 4096)
        codes: list[int | None] = []
        codes.extend(int(line) for line in result.stdout.split()[:len(files)] if line.isdigit())
        codes.extend([None] * (len(files) - len(codes)))
        return codes

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

        def shown(p: str) -> str:
            """A searched file's name as the model sees it (relative to the workspace)."""
            if search.kind == "file":
                return rel
            return p if rel == "." else posixpath.join(rel, p)

        binary = list(dict.fromkeys(shown(p) for p in search.binary_files))
        # Built once (a grep answers hundreds of lines; two copies of each were a third of the
        # call on the host), and validated: pydantic's model_construct runs in Python and took
        # twice as long as validation in its Rust core (1.5 against 0.75 us a line).
        lines = [GrepLine(path=shown(ln.path), line=ln.line, text=self._cut_line(ln.text)[0],
                          match=ln.match) for ln in search.lines]
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


def _batch_tar(files: list[tuple[str, bytes, int | None]]) -> bytes:
    """The stdin of WRITE_MANY / op_write_many: `paths`, `modes`, then file i's data as `i`."""
    import io
    import tarfile

    def add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        info.mode = 0o600
        tar.addfile(info, io.BytesIO(data))

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        add(tar, "paths", b"".join(t.encode("utf-8", "surrogateescape") + b"\n"
                                   for t, _, _ in files))
        add(tar, "modes", b"".join((b"-" if m is None else b"%o" % m) + b"\n"
                                   for _, _, m in files))
        for index, (_, data, _) in enumerate(files):
            add(tar, str(index), data)
    return buf.getvalue()
