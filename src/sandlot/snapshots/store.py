"""Take, list, restore and compare snapshots: the host side of scripts.py.

Everything here talks to the sandbox through `Sandbox.exec` (one script per call), so every
backend has snapshots as soon as its sandbox has sh and git. What the sandbox prints is
untrusted: ids, numbers and JSON are checked before they become a `Snapshot`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import posixpath
import re
import secrets
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _shell
from .._engine import ExecResult, engine_of
from .._session.client import helper_commands
from ..errors import (
    FORCE,
    ConfigurationError,
    ForeignSnapshotError,
    SnapshotBusyError,
    SnapshotDiffTooLargeError,
    SnapshotDiskFullError,
    SnapshotError,
    SnapshotNotFoundError,
    SnapshotToolsMissingError,
)
from . import scripts
from .models import Snapshot, SnapshotChange, SnapshotDiff

if TYPE_CHECKING:
    from ..sandbox import Sandbox

log = logging.getLogger("sandlot.snapshots")

#: packer.py's source, sent with every script that stages files (it runs in the sandbox).
PACKER_SOURCE = Path(__file__).with_name("packer.py").read_text()
#: From how many changed files, or bytes in them, the packer hashes them instead of git: below
#: both, starting python3 and rewriting the index cost more than git's own hashing (measured
#: on a 10,000-file store: +40 ms for one changed file, adr/0056).
PACKER_FILES = 64
PACKER_BYTES = 8 << 20


def _packer_args() -> tuple[str, str]:
    return PACKER_SOURCE, f"{PACKER_FILES} {PACKER_BYTES}"

#: Longest label a snapshot may carry.
MAX_LABEL = 1000
#: Largest patch `diff` returns by default.
DIFF_LIMIT = 64 << 20
#: How long one script may run (a snapshot of a large tree hashes every file once).
SCRIPT_SECONDS = 1800.0

_ID = re.compile(r"[0-9a-f]{12}\Z")
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?\Z")
_STORE = re.compile(r"[0-9a-f]{32}\Z")
_INSTALL = (
    "install them in the sandbox: add git (it brings the rest on most images) to the Docker "
    "image (apt-get install -y git, apk add git) or to the Coder template; a local sandbox "
    "uses the host's"
)


def state_dir(sandbox: Sandbox) -> str:
    """sandlot's directory in the sandbox (ignored by git): the store lives under it."""
    return posixpath.join(sandbox.worktree, ".sandlot")


# ---- arguments -----------------------------------------------------------------------------


def _roots(sandbox: Sandbox, paths: Sequence[str] | None) -> tuple[str, ...]:
    if paths is None:
        return (sandbox.worktree,)
    if isinstance(paths, str):
        paths = [paths]
    roots: list[str] = []
    for path in paths:
        root = posixpath.normpath(_shell.validate_sandbox_path(path, "snapshot path"))
        if "\n" in root:
            raise ConfigurationError(f"snapshot path {root!r} holds a newline; rename it")
        if root == "/":
            raise ConfigurationError("a snapshot of / is not a work tree: name its directory")
        if root not in roots:
            roots.append(root)
    if not roots:
        raise ConfigurationError("paths= is empty: give at least one directory, or None")
    for a in roots:
        for b in roots:
            if a != b and b.startswith(a + "/"):
                raise ConfigurationError(
                    f"snapshot paths overlap: {b!r} is inside {a!r}; give only {a!r}"
                )
    return tuple(roots)


def _excludes(exclude: Sequence[str]) -> tuple[str, ...]:
    if isinstance(exclude, str):
        exclude = [exclude]
    out: list[str] = []
    for pattern in exclude:
        if not isinstance(pattern, str) or not pattern or "\0" in pattern or "\n" in pattern:
            raise ConfigurationError(
                f"exclude pattern {pattern!r} must be a non-empty str without NUL or newline"
            )
        out.append(pattern)
    return tuple(out)


def _pathspecs(exclude: Sequence[str]) -> list[str]:
    # sandlot's own directory is never part of a snapshot, even with include_ignored; a
    # pattern excludes what it names and, when that is a directory, everything below it.
    specs = [".", ":(exclude,glob)**/.sandlot", ":(exclude,glob)**/.sandlot/**"]
    for pattern in exclude:
        specs += [f":(exclude,glob){pattern}", f":(exclude,glob){pattern}/**"]
    return specs


def _root_words(roots: Sequence[str], include_ignored: bool, exclude: Sequence[str]) -> str:
    """`key:base64(root)` per root. The key names the root's persistent index; it covers the
    options too, since an index that once tracked ignored files would keep tracking them."""
    words = []
    for root in roots:
        key = hashlib.sha256(
            json.dumps([root, include_ignored, list(exclude)]).encode()
        ).hexdigest()[:16]
        words.append(f"{key}:{base64.b64encode(root.encode()).decode()}")
    return " ".join(words)


async def _run(
    sandbox: Sandbox, script: str, roots: Sequence[str],
    include_ignored: bool, exclude: Sequence[str], *extra: str, max_output: int = 1 << 20,
) -> ExecResult:
    argv = ["sh", "-c", script, "sandlot-snapshot", state_dir(sandbox),
            _root_words(roots, include_ignored, exclude), "-f" if include_ignored else "-",
            *extra, *_pathspecs(exclude)]
    return await sandbox.exec(argv, cwd="/", timeout=SCRIPT_SECONDS, max_output=max_output)


def _failed(sandbox: Sandbox, result: ExecResult, what: str) -> SnapshotError:
    stderr = result.stderr.strip()
    where = f"sandbox {sandbox.name!r}"
    if result.exit_code == scripts.TOOLS_MISSING and "missing:" in stderr:
        found = stderr.rsplit("missing:", 1)[1].split()
        missing = [t for t in found if t in scripts.TOOLS]
        return SnapshotToolsMissingError(
            f"{what} needs {', '.join(missing)} in {where}, which has none: {_INSTALL}",
            missing=missing,
        )
    # git's pack writer says the last one when a write to the pack comes up short.
    if any(sign in stderr for sign in ("No space left on device", "Disk quota exceeded",
                                       "Out of diskspace")):
        return SnapshotDiskFullError(
            f"{what}: the disk of {where} is full (no snapshot was recorded); free space there "
            f"(the store is {state_dir(sandbox)}/snapshots) or pass exclude= for large output"
        )
    if result.exit_code == scripts.NO_ROOT:
        return SnapshotError(f"{what}: {stderr[-500:]} in {where}; create it first")
    if result.timed_out:
        return SnapshotError(f"{what} in {where} did not finish in {SCRIPT_SECONDS:g}s")
    return SnapshotError(
        f"{what} in {where} failed (exit {result.exit_code}): "
        f"{stderr[-1500:] or 'no error output'}"
    )


def _note_fallback(sandbox: Sandbox, result: ExecResult) -> None:
    """Say so when git, not the packer, hashed the files: right, only slower (adr/0056)."""
    notes = [line for line in result.stderr.splitlines() if line.startswith("sandlot: ")]
    if notes:
        log.warning("snapshot in sandbox %s: %s", sandbox.name, "; ".join(notes)[:500])


# ---- take ----------------------------------------------------------------------------------


async def take(
    sandbox: Sandbox,
    label: str | None = None,
    paths: Sequence[str] | None = None,
    *,
    include_ignored: bool = False,
    exclude: Sequence[str] = (),
) -> Snapshot:
    """Record the work tree (or `paths`); see `Sandbox.snapshot`."""
    sandbox._ensure_open()
    if label is not None and (not isinstance(label, str) or len(label) > MAX_LABEL
                              or "\0" in label):
        raise ConfigurationError(
            f"label must be a str of at most {MAX_LABEL} characters without NUL, or None"
        )
    roots = _roots(sandbox, paths)
    patterns = _excludes(exclude)
    snap_id = secrets.token_hex(6)
    created = time.time()
    meta = json.dumps({"v": 1, "label": label, "created": created, "roots": list(roots),
                       "include_ignored": bool(include_ignored), "exclude": list(patterns)})
    result = await _run(sandbox, scripts.TAKE, roots, include_ignored, patterns,
                        secrets.token_hex(16), snap_id, meta, *_packer_args())
    if result.exit_code != 0:
        raise _failed(sandbox, result, "snapshot")
    _note_fallback(sandbox, result)
    fields = result.stdout.split()
    if (len(fields) != 4 or not _STORE.match(fields[0]) or not _SHA.match(fields[1])
            or not fields[2].isdigit() or not fields[3].isdigit()):
        raise SnapshotError(f"snapshot in sandbox {sandbox.name!r} printed an unreadable "
                            f"record: {result.stdout[:200]!r}")
    return Snapshot(id=snap_id, label=label, created=created, size=int(fields[3]),
                    files=int(fields[2]), roots=roots, sandbox=sandbox.name,
                    provider=sandbox.provider, store=fields[0], commit=fields[1],
                    include_ignored=bool(include_ignored), exclude=patterns, taken_in=sandbox)


# ---- list ----------------------------------------------------------------------------------


async def list_all(sandbox: Sandbox) -> list[Snapshot]:
    """Every snapshot of the sandbox's store, oldest first."""
    sandbox._ensure_open()
    result = await _run(sandbox, scripts.LIST, [sandbox.worktree], False, (),
                        max_output=32 << 20)
    if result.exit_code != 0 or result.truncated:
        raise _failed(sandbox, result, "listing snapshots")
    return sorted(_parse_list(sandbox, result.stdout), key=lambda s: (s.created, s.id))


def _parse_list(sandbox: Sandbox, out: str) -> list[Snapshot]:
    bad = SnapshotError(f"the snapshot store of sandbox {sandbox.name!r} printed an unreadable "
                        f"list; remove {state_dir(sandbox)}/snapshots to start afresh")
    head, _, rest = out.partition("\n")
    if head.strip() == "none":
        return []
    store = head.strip()
    if not _STORE.match(store):
        raise bad
    listing, sep, batch = rest.partition("--\n")
    if not sep:
        raise bad
    rows = []
    for line in listing.splitlines():
        parts = line.split()
        if (len(parts) != 6 or not _ID.match(parts[0]) or not _SHA.match(parts[1])
                or parts[2:4] != ["sandlot", "snapshot"]
                or not parts[4].isdigit() or not parts[5].isdigit()):
            continue  # not one of ours (a ref written by hand): not listed
        rows.append(parts)
    metas = _parse_batch(batch.encode(), bad)
    found = []
    for parts, meta in zip(rows, metas, strict=False):
        if meta is None:
            continue
        found.append(Snapshot(
            id=parts[0], label=meta["label"], created=meta["created"], size=int(parts[5]),
            files=int(parts[4]), roots=tuple(meta["roots"]), sandbox=sandbox.name,
            provider=sandbox.provider, store=store, commit=parts[1],
            include_ignored=meta["include_ignored"], exclude=tuple(meta["exclude"]),
            taken_in=sandbox,
        ))
    return found


def _parse_batch(data: bytes, bad: SnapshotError) -> list[dict[str, Any] | None]:
    """`git cat-file --batch` output -> each object's meta (None when unreadable)."""
    metas: list[dict[str, Any] | None] = []
    at = 0
    while at < len(data):
        end = data.find(b"\n", at)
        if end < 0:
            raise bad
        header = data[at:end].split()
        at = end + 1
        if len(header) == 3 and header[2].isdigit():
            size = int(header[2])
            body = data[at:at + size]
            at += size + 1
            metas.append(_meta(body))
        else:  # "<name> missing"
            metas.append(None)
    return metas


def _meta(body: bytes) -> dict[str, Any] | None:
    try:
        meta = json.loads(body)
    except ValueError:
        return None
    if not isinstance(meta, dict):
        return None
    label, created = meta.get("label"), meta.get("created")
    roots, exclude = meta.get("roots"), meta.get("exclude")
    ok = (
        (label is None or (isinstance(label, str) and len(label) <= MAX_LABEL))
        and isinstance(created, int | float) and not isinstance(created, bool)
        and isinstance(roots, list) and roots and all(
            isinstance(r, str) and r.startswith("/") and "\n" not in r and "\0" not in r
            for r in roots)
        and isinstance(exclude, list) and all(isinstance(p, str) for p in exclude)
        and isinstance(meta.get("include_ignored"), bool)
    )
    return meta if ok else None


async def find(sandbox: Sandbox, snapshot: Snapshot | str) -> Snapshot:
    """The snapshot as this sandbox's store knows it; typed errors for foreign or unknown."""
    if isinstance(snapshot, Snapshot):
        if snapshot.sandbox != sandbox.name or snapshot.provider != sandbox.provider:
            raise ForeignSnapshotError(
                f"snapshot {snapshot.id} was taken in {snapshot.provider} sandbox "
                f"{snapshot.sandbox!r}, not in {sandbox.name!r}: restore it there, or start "
                "sandboxes from it with sandlot.fork()"
            )
        return snapshot
    if not isinstance(snapshot, str) or not _ID.match(snapshot):
        raise ConfigurationError(
            f"snapshot must be a Snapshot or a 12-hex-digit id, got {snapshot!r}"
        )
    for known in await list_all(sandbox):
        if known.id == snapshot:
            return known
    raise SnapshotNotFoundError(
        f"no snapshot {snapshot} in sandbox {sandbox.name!r}; see sandbox.snapshots()"
    )


def _gone(sandbox: Sandbox, snap: Snapshot, result: ExecResult, what: str) -> SnapshotError:
    if result.exit_code == scripts.FOREIGN_STORE:
        return ForeignSnapshotError(
            f"snapshot {snap.id} belongs to another snapshot store than the one of sandbox "
            f"{sandbox.name!r} now (its .sandlot directory was replaced): take a new snapshot"
        )
    if result.exit_code in (scripts.NO_SNAPSHOT, scripts.NO_STORE):
        return SnapshotNotFoundError(
            f"snapshot {snap.id} is not in sandbox {sandbox.name!r} (any more); see "
            "sandbox.snapshots()"
        )
    return _failed(sandbox, result, what)


# ---- restore -------------------------------------------------------------------------------


async def holders(sandbox: Sandbox, roots: Sequence[str]) -> list[str]:
    """What may still write under `roots`: commands this program started in the sandbox that
    are still running; processes visible there that hold a file under a root open for
    writing; processes sandlot started (run mark) whose working directory is under a root."""
    found = []
    engine = engine_of(sandbox)
    running = len(engine.running - helper_commands(engine))
    if running:
        found.append(f"{running} command(s) started through this sandbox object still running")
    result = await sandbox.exec(["sh", "-c", scripts.HOLDERS, "sandlot-snapshot", *roots],
                                cwd="/", timeout=120, max_output=1 << 16)
    found += [line.strip()[:200] for line in result.stdout.splitlines() if line.strip()][:20]
    return found


async def restore(sandbox: Sandbox, snapshot: Snapshot | str, *, force: bool = False) -> None:
    """Put the snapshot's roots back exactly; see `Sandbox.restore`."""
    sandbox._ensure_open()
    snap = await find(sandbox, snapshot)
    if not force:
        busy = await holders(sandbox, snap.roots)
        if busy:
            raise SnapshotBusyError(
                f"restore of snapshot {snap.id} would rewrite {', '.join(snap.roots)} while "
                f"something still works there: {'; '.join(busy)}. End it first (kill the "
                "process) or pass force=True to restore anyway",
                holders=busy,
            ).hinted(FORCE)
    await restore_unchecked(sandbox, snap)


async def restore_unchecked(sandbox: Sandbox, snap: Snapshot) -> None:
    """The restore itself, without the ownership and busy checks (a fork restores the
    snapshot it was copied with, under its own name and worktree)."""
    result = await _run(sandbox, scripts.RESTORE, snap.roots, snap.include_ignored,
                        snap.exclude, snap.commit, snap.store, snap.id)
    if result.exit_code != 0:
        raise _gone(sandbox, snap, result, f"restore of snapshot {snap.id}")


# ---- diff ----------------------------------------------------------------------------------


async def diff(
    sandbox: Sandbox, snapshot: Snapshot | str, *, max_bytes: int = DIFF_LIMIT
) -> SnapshotDiff:
    """The tree now against the snapshot; see `Sandbox.snapshot_diff`."""
    sandbox._ensure_open()
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ConfigurationError(f"max_bytes must be a positive int, got {max_bytes!r}")
    snap = await find(sandbox, snapshot)
    # base64 makes 4 bytes of 3; the name lists ride along.
    limit = max_bytes * 4 // 3 + (4 << 20)
    result = await _run(sandbox, scripts.DIFF, snap.roots, snap.include_ignored,
                        snap.exclude, snap.commit, snap.store, snap.id, *_packer_args(),
                        max_output=limit)
    if result.exit_code != 0:
        raise _gone(sandbox, snap, result, f"diff against snapshot {snap.id}")
    _note_fallback(sandbox, result)
    lines = result.stdout.split("\n")
    if result.truncated:
        raise SnapshotDiffTooLargeError(
            f"the patch against snapshot {snap.id} is larger than max_bytes={max_bytes}: pass "
            "a larger max_bytes, or look at the changed files first"
        )
    changes: list[SnapshotChange] = []
    patch = b""
    try:
        for index, root in enumerate(snap.roots):
            names = base64.b64decode(lines[2 * index], validate=True)
            patch += base64.b64decode(lines[2 * index + 1], validate=True)
            fields = names.split(b"\0")
            for status, path in zip(fields[0::2], fields[1::2], strict=False):
                if status and path:
                    changes.append(SnapshotChange(status=status.decode("ascii", "replace"),
                                                  raw_path=path, root=root))
    except (IndexError, binascii.Error) as exc:
        raise SnapshotError(
            f"diff against snapshot {snap.id} in sandbox {sandbox.name!r} printed unreadable "
            "output"
        ) from exc
    if len(patch) > max_bytes:
        raise SnapshotDiffTooLargeError(
            f"the patch against snapshot {snap.id} is {len(patch)} bytes, more than "
            f"max_bytes={max_bytes}: pass a larger max_bytes"
        )
    return SnapshotDiff(snapshot=snap.id, changes=changes, patch=patch)
