"""What the snapshot calls return: plain frozen records, parsed from what the sandbox printed."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..sandbox import Sandbox


@dataclass(frozen=True)
class Snapshot:
    """One recorded state of a sandbox's work tree (or of the roots given to `snapshot`).

    `sandbox` and `store` say where it lives: it can be restored only there (a restore
    elsewhere is a `ForeignSnapshotError`). `size` is the bytes of the files' contents,
    `files` how many files and symlinks it holds (empty directories are kept but not counted).
    """

    id: str
    label: str | None
    created: float
    size: int
    files: int
    roots: tuple[str, ...]
    sandbox: str
    provider: str
    store: str
    commit: str
    include_ignored: bool = False
    exclude: tuple[str, ...] = ()
    #: The sandbox object that took or listed it, for `sandlot.fork(snapshot)`.
    taken_in: Sandbox | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class SnapshotChange:
    """One path that differs between a snapshot and the tree now.

    `status` is git's letter: A (added since), D (deleted since), M (contents or executable
    bit changed), T (type changed: file, symlink). `path` is relative to `root`, decoded with
    `surrogateescape` so a name that is not UTF-8 round-trips (`raw_path` has its bytes).
    """

    status: str
    raw_path: bytes
    root: str

    @property
    def path(self) -> str:
        return os.fsdecode(self.raw_path)


@dataclass(frozen=True)
class SnapshotDiff:
    """The tree now against a snapshot: the changed paths and one binary-safe git patch
    (`git apply` on the snapshot's tree gives the tree now; paths relative to the root, or
    prefixed with the root's index `<n>/` when the snapshot has several roots)."""

    snapshot: str
    changes: list[SnapshotChange] = field(default_factory=list)
    patch: bytes = b""

    @property
    def text(self) -> str:
        """The patch as text (bytes that are not UTF-8 replaced): for display only."""
        return self.patch.decode("utf-8", errors="replace")
