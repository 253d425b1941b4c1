"""`SandlotSandboxSession`: the SDK's `BaseSandboxSession` over one sandlot `Sandbox`.

Reads and writes take the toolbox's race-free path (tools/safe_helper.py: every path walked
from the workspace root's descriptor, symlinks followed by hand and refused when they lead
out), so a symlink the sandbox's own commands planted cannot carry a read or write outside
the workspace. The other file operations (ls, mkdir, rm, mv) are the SDK's own shell
fallbacks, with the toolbox's resolver in front (a path that resolves outside the
workspace is refused before the command runs).
"""

from __future__ import annotations

import asyncio
import io
import stat
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agents.sandbox.entries import BaseEntry, File
from agents.sandbox.errors import (
    ExecNonZeroError,
    ExecTimeoutError,
    ExecTransportError,
    ExposedPortUnavailableError,
    InvalidManifestPathError,
    WorkspaceArchiveReadError,
    WorkspaceArchiveWriteError,
    WorkspaceReadNotFoundError,
    WorkspaceStartError,
    WorkspaceWriteTypeError,
)
from agents.sandbox.materialization import MaterializationResult, MaterializedFile
from agents.sandbox.session.base_sandbox_session import BaseSandboxSession
from agents.sandbox.session.manifest_application import ManifestApplier
from agents.sandbox.session.pty_types import PtyExecUpdate
from agents.sandbox.types import ExecResult, ExposedPortEndpoint, User
from agents.sandbox.util.tar_utils import (
    UnsafeTarMemberError,
    safe_extract_tarfile,
    validate_tar_bytes,
)

from ...errors import InvalidPathError, PathOutsideWorkspaceError, SandlotError
from ...forward import ForwardAddress
from ...sandbox import Sandbox
from ...tools import Toolbox
from ...tools import scripts as _scripts
from ...tools.runner import ScriptResult
from ...workspaces import Workspace
from .config import SandlotSandboxSessionState
from .pty import PtyProcesses
from .workspace_tar import pack

_Exit = _scripts.Exit
#: Largest file read whole (the SDK reads files whole; the Deep Agents backend's bound).
FILE_BYTES = 64 << 20
#: The toolbox's resolver, then mkdir of what it resolved ($3: "-p" or empty).
_MKDIR = _scripts.PRELUDE + 'resolve "$1" "$2"\nmkdir $3 -- "$P" || exit 1\n'
#: Files per toolbox call when a manifest's files are written.
_BATCH_FILES = 1000


class _Forward:
    """One exposed port: `Sandbox.forward_port` held open by a task of its own (its context
    must be entered and left by one task) until `stop`."""

    def __init__(self) -> None:
        self.ready: asyncio.Future[ForwardAddress] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    async def run(self, sandbox: Sandbox, port: int) -> None:
        try:
            async with sandbox.forward_port(port) as address:
                self.ready.set_result(address)
                await self.stop.wait()
        except BaseException as exc:
            if not self.ready.done():
                self.ready.set_exception(exc)
            if not isinstance(exc, Exception):
                raise

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.gather(self.task, return_exceptions=True)


class SandlotSandboxSession(BaseSandboxSession):
    """A sandbox agent's session on a sandlot sandbox (local, bubblewrap, docker, coder)."""

    state: SandlotSandboxSessionState

    def __init__(self, *, state: SandlotSandboxSessionState, sandbox: Sandbox) -> None:
        self.state = state
        self.sandbox = sandbox
        self._pty = PtyProcesses(sandbox)
        self._forwards: dict[int, _Forward] = {}
        self._box: Toolbox | None = None
        self._root_ready = state.manifest.root == sandbox.worktree

    def __repr__(self) -> str:
        return f"<SandlotSandboxSession root={self.state.manifest.root!r} on {self.sandbox!r}>"

    # ---- lifecycle ----------------------------------------------------------------------

    async def _prepare_backend_workspace(self) -> None:
        if self._root_ready:
            return
        root = self.state.manifest.root
        try:
            made = await self.sandbox.exec(["mkdir", "-p", "--", root], timeout=60)
        except SandlotError as exc:
            raise WorkspaceStartError(path=Path(root), cause=exc) from exc
        if made.exit_code != 0:
            raise WorkspaceStartError(path=Path(root), context={
                "reason": "workspace_root_mkdir_failed", "stderr": made.stderr[-2000:]})
        self._root_ready = True

    def _current_runtime_helper_cache_key(self) -> object | None:
        return (self.state.backend, self.state.sandbox_ref)

    async def _validate_path_access(self, path: Path | str, *, for_write: bool = False) -> Path:
        # ls / mkdir / rm / mv / same_file run the SDK's shell fallbacks: check first, in the
        # sandbox, that the path resolves inside the workspace (the toolbox's resolver; the
        # SDK's own helper is a file in /tmp, which bubblewrap gives every command afresh).
        # Read and write below need no such check: their one script is contained itself.
        ws, target = self._contain(path, for_write=for_write)
        box = self._toolbox()
        try:
            result = await box._run("resolve", _scripts.RESOLVE, [ws.root, target])
        except SandlotError as exc:
            raise ExecTransportError(command=["resolve", target], context={
                "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        _check_contained(result, path, ["resolve", target])
        return Path(target)

    async def mkdir(self, path: Path | str, *, parents: bool = False,
                    user: str | User | None = None) -> None:
        # apply_patch makes a file's parent before every write: one round trip here (the
        # check and the mkdir in one script), none for the workspace root, which start()
        # made, instead of the SDK's two (check, then mkdir).
        if user is not None:
            await super().mkdir(path, parents=parents, user=user)
            return
        ws, target = self._contain(path, for_write=True)
        if parents and target.rstrip("/") == ws.root.rstrip("/") and self._root_ready:
            return
        box = self._toolbox()
        try:
            result = await box._run("mkdir", _MKDIR, [ws.root, target, "-p" if parents else ""])
        except SandlotError as exc:
            raise WorkspaceArchiveWriteError(path=Path(target), context={
                "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        _check_contained(result, path, ["mkdir", target])

    async def running(self) -> bool:
        return not self.sandbox.closed

    async def _shutdown_backend(self) -> None:
        # The session's transient parts end here; the sandbox itself is the client's to
        # delete (`SandlotSandboxClient.delete` applies the configured on_close).
        forwards = list(self._forwards.values())
        self._forwards.clear()
        for fwd in forwards:
            await fwd.close()

    async def close_sandbox(self) -> None:
        """End processes and forwards, then close the sandbox (its on_close applies)."""
        await self.pty_terminate_all()
        await self._shutdown_backend()
        await self.sandbox.close()

    # ---- exec and PTY -------------------------------------------------------------------

    def _cwd(self) -> str:
        return self.state.manifest.root if self._root_ready else self.sandbox.worktree

    async def _exec_internal(self, *command: str | Path,
                             timeout: float | None = None) -> ExecResult:
        argv = [str(part) for part in command]
        try:
            result = await self.sandbox.exec(argv, cwd=self._cwd(), timeout=timeout)
        except SandlotError as exc:
            raise ExecTransportError(command=argv, context={"backend": "sandlot",
                                     "error": type(exc).__name__}, cause=exc) from exc
        if result.timed_out:
            raise ExecTimeoutError(command=argv, timeout_s=timeout)
        return ExecResult(stdout=result.stdout.encode("utf-8", "surrogateescape"),
                          stderr=result.stderr.encode("utf-8", "surrogateescape"),
                          exit_code=result.exit_code)

    def _prepare_exec_command(self, *command: str | Path, shell: bool | list[str],
                              user: str | User | None) -> list[str]:
        # A command string runs as sandlot runs one: `sh -c`, not the SDK's default login
        # shell (`sh -lc`, which sources the profiles: 25-30 ms a call on the test host, for
        # an environment the sandbox's configuration already sets). The SDK's own local
        # backend does the same; an explicit shell list is kept as given. See adr/0044.
        if shell is True:
            shell = ["sh", "-c"]
        return super()._prepare_exec_command(*command, shell=shell, user=user)

    def supports_pty(self) -> bool:
        return True

    async def pty_exec_start(self, *command: str | Path, timeout: float | None = None,
                             shell: bool | list[str] = True, user: str | User | None = None,
                             tty: bool = False, yield_time_s: float | None = None,
                             max_output_tokens: int | None = None) -> PtyExecUpdate:
        argv = self._prepare_exec_command(*command, shell=shell, user=user)
        return await self._pty.start(argv, cwd=self._cwd(), tty=tty, yield_time_s=yield_time_s,
                                     max_output_tokens=max_output_tokens)

    async def pty_write_stdin(self, *, session_id: int, chars: str,
                              yield_time_s: float | None = None,
                              max_output_tokens: int | None = None) -> PtyExecUpdate:
        return await self._pty.write(session_id, chars, yield_time_s=yield_time_s,
                                     max_output_tokens=max_output_tokens)

    async def pty_terminate_all(self) -> None:
        await self._pty.terminate_all()

    # ---- exposed ports ------------------------------------------------------------------

    async def _resolve_exposed_port(self, port: int) -> ExposedPortEndpoint:
        fwd = self._forwards.get(port)
        if fwd is None or fwd.task is None or fwd.task.done():
            fwd = _Forward()
            fwd.task = asyncio.create_task(fwd.run(self.sandbox, port))
            self._forwards[port] = fwd
        try:
            address = await asyncio.shield(fwd.ready)
        except SandlotError as exc:
            self._forwards.pop(port, None)
            raise ExposedPortUnavailableError(
                port=port, exposed_ports=self.state.exposed_ports, reason="backend_unavailable",
                context={"backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        return ExposedPortEndpoint(host=address.host, port=address.port, tls=False)

    # ---- read and write (the toolbox's race-free path) ----------------------------------

    def _toolbox(self) -> Toolbox:
        root = self.state.manifest.root
        if self._box is None or self._box.workspaces.choose(None).root != root:
            self._box = Toolbox(self.sandbox, {"root": root}, timeout=300.0)
        return self._box

    def _contain(self, path: Path | str, *, for_write: bool) -> tuple[Workspace, str]:
        normal = self.normalize_path(path, for_write=for_write)  # lexical: ../, absolute
        try:
            return self._toolbox()._target(normal.as_posix(), None)
        except PathOutsideWorkspaceError:
            raise InvalidManifestPathError(rel=str(path), reason="escape_root") from None
        except InvalidPathError as exc:  # e.g. a newline or NUL in a name
            raise InvalidManifestPathError(rel=str(path), reason="escape_root", context={
                "reason": "invalid_path", "detail": str(exc)}) from None

    async def read(self, path: Path, *, user: str | User | None = None) -> io.IOBase:
        if user is not None:
            await self._check_read_with_exec(path, user=user)
        ws, target = self._contain(path, for_write=False)
        box = self._toolbox()
        try:
            result = await box._run("read", _scripts.FETCH, [ws.root, target, str(FILE_BYTES)],
                                    limit=FILE_BYTES + 4096)
        except SandlotError as exc:
            raise WorkspaceArchiveReadError(path=Path(path), context={
                "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        code = result.exit_code
        if code == 0:
            return io.BytesIO(result.stdout)
        if code == _Exit.NOT_FOUND:
            raise WorkspaceReadNotFoundError(path=Path(path))
        if code in (_Exit.ESCAPES, _Exit.UNRESOLVABLE):
            raise InvalidManifestPathError(rel=str(path), reason="escape_root",
                                           context={"reason": "symlink_escape"})
        error = box._fail("read", result, ws, target, target)
        raise WorkspaceArchiveReadError(path=Path(path), context={
            "reason": _reason(code),
            "detail": str(error)})

    async def write(self, path: Path, data: io.IOBase, *,
                    user: str | User | None = None) -> None:
        payload = data.read()
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        if not isinstance(payload, bytes | bytearray):
            raise WorkspaceWriteTypeError(path=Path(path), actual_type=type(payload).__name__)
        if user is not None:
            await self._check_write_with_exec(path, user=user)
        ws, target = self._contain(path, for_write=True)
        box = self._toolbox()
        try:
            result = await box._write_bytes("write", ws, target, "any", "", bytes(payload))
        except SandlotError as exc:
            raise WorkspaceArchiveWriteError(path=Path(path), context={
                "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        code = result.exit_code
        if code == 0:
            return
        if code in (_Exit.ESCAPES, _Exit.UNRESOLVABLE):
            raise InvalidManifestPathError(rel=str(path), reason="escape_root",
                                           context={"reason": "symlink_escape"})
        error = box._fail("write", result, ws, target, target)
        raise WorkspaceArchiveWriteError(path=Path(path), context={
            "reason": _reason(code),
            "detail": str(error)})

    # ---- many files at once (manifests) -------------------------------------------------

    async def _apply_manifest(self, *, only_ephemeral: bool = False,
                              provision_accounts: bool = True) -> MaterializationResult:
        # The SDK's applier, with its batches of entries handed to `_apply_entry_batch` below.
        applier = _BatchingApplier(
            self, mkdir=lambda path: self.mkdir(path, parents=True),
            exec_checked_nonzero=self._exec_checked_nonzero,
            apply_entry=lambda entry, dest, base_dir: entry.apply(self, dest, base_dir),
            max_entry_concurrency=self._max_manifest_entry_concurrency)
        return await applier.apply_manifest(
            self.state.manifest, only_ephemeral=only_ephemeral,
            provision_accounts=provision_accounts, base_dir=self._manifest_base_dir())

    async def _apply_entry_batch(self, entries: Sequence[tuple[Path, BaseEntry]], *,
                                 base_dir: Path) -> list[MaterializedFile]:
        # The SDK writes a manifest's files one by one, each with a chmod after it: two round
        # trips per file (a thousand files took 90 s on local). Plain files go in batches of
        # one toolbox call instead, each written atomically with its mode on the race-free
        # path; everything else (directories, mounts, files with a group) the SDK's way.
        plain = [(dest, entry) for dest, entry in entries
                 if type(entry) is File and entry.group is None]
        rest = [(dest, entry) for dest, entry in entries
                if not (type(entry) is File and entry.group is None)]
        made = await super()._apply_entry_batch(rest, base_dir=base_dir) if rest else []
        for start in range(0, len(plain), _BATCH_FILES):
            await self._write_files(plain[start:start + _BATCH_FILES])
        return made

    async def _write_files(self, files: Sequence[tuple[Path, BaseEntry]]) -> None:
        box = self._toolbox()
        items: list[tuple[str, bytes, int | None]] = []
        ws: Workspace | None = None
        for dest, entry in files:
            assert isinstance(entry, File)
            ws, target = self._contain(dest, for_write=True)
            items.append((target, entry.content, stat.S_IMODE(entry.permissions.to_mode())))
        if ws is None:
            return
        try:
            codes = await box._write_many("write", ws, items)
        except SandlotError as exc:
            raise WorkspaceArchiveWriteError(path=files[0][0], context={
                "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        for (dest, _), code in zip(files, codes, strict=True):
            if code in (_Exit.ESCAPES, _Exit.UNRESOLVABLE):
                raise InvalidManifestPathError(rel=str(dest), reason="escape_root",
                                               context={"reason": "symlink_escape"})
            if code != 0:
                raise WorkspaceArchiveWriteError(path=dest, context={
                    "reason": "interrupted" if code is None else _reason(code)})

    # ---- the workspace as a tar stream --------------------------------------------------

    async def persist_workspace(self) -> io.IOBase:
        root = self.state.manifest.root
        skip = self._persist_workspace_skip_relpaths()
        with tempfile.TemporaryDirectory(prefix="sandlot-persist-") as tmp:
            copy = Path(tmp) / "workspace"
            try:
                await self.sandbox.copy_out(root, copy)
            except SandlotError as exc:
                raise WorkspaceArchiveReadError(path=Path(root), context={
                    "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
            return await asyncio.to_thread(pack, copy, skip)

    async def hydrate_workspace(self, data: io.IOBase) -> None:
        root = self.state.manifest.root
        raw = data.read()
        if isinstance(raw, str):
            raw = raw.encode("utf-8")
        if not isinstance(raw, bytes | bytearray):
            raise WorkspaceWriteTypeError(path=Path(root), actual_type=type(raw).__name__)
        try:
            validate_tar_bytes(bytes(raw), allow_external_symlink_targets=False)
        except UnsafeTarMemberError as exc:
            raise WorkspaceArchiveWriteError(path=Path(root), context={
                "reason": "unsafe_or_invalid_tar", "member": exc.member}, cause=exc) from exc
        with tempfile.TemporaryDirectory(prefix="sandlot-hydrate-") as tmp:
            staged = Path(tmp) / "workspace"
            await asyncio.to_thread(_extract, bytes(raw), staged)
            try:
                await self.sandbox.copy_in(staged, root)
            except SandlotError as exc:
                raise WorkspaceArchiveWriteError(path=Path(root), context={
                    "backend": "sandlot", "error": type(exc).__name__}, cause=exc) from exc
        self._root_ready = True


class _BatchingApplier(ManifestApplier):
    """The SDK's manifest applier, whose batches go to the session's `_apply_entry_batch`."""

    def __init__(self, session: SandlotSandboxSession, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._session = session

    async def _apply_entry_batch(self, entries: Sequence[tuple[Path, BaseEntry]], *,
                                 base_dir: Path) -> list[MaterializedFile]:
        return await self._session._apply_entry_batch(entries, base_dir=base_dir)


def _reason(code: int) -> str:
    """The toolbox's exit code as a word for the SDK error's context."""
    member = _Exit._value2member_map_.get(code)
    return member.name.lower() if isinstance(member, _Exit) else f"exit_{code}"


def _extract(raw: bytes, into: Path) -> None:
    import tarfile

    with tarfile.open(fileobj=io.BytesIO(raw), mode="r:*") as tar:
        safe_extract_tarfile(tar, root=into, allow_external_symlink_targets=False)


def _check_contained(result: ScriptResult, path: Path | str, command: list[str]) -> None:
    """The SDK's errors for a containment script's exit: a path that escapes the workspace
    (through a symlink, or unresolvable) is `InvalidManifestPathError`, any other failure
    `ExecNonZeroError`."""
    if result.exit_code in (_Exit.ESCAPES, _Exit.UNRESOLVABLE):
        raise InvalidManifestPathError(rel=str(path), reason="escape_root",
                                       context={"reason": "symlink_escape"})
    if result.exit_code != 0:
        raise ExecNonZeroError(ExecResult(stdout=b"", stderr=result.stderr.encode(),
                                          exit_code=result.exit_code), command=command)
