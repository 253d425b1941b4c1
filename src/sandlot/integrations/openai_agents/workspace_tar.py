"""The workspace as a tar stream and back, through sandlot's copy path (no I/O to the
sandbox here: the session copies the worktree out to a host directory first, or in after).

`persist_workspace` must give workspace-relative members the SDK's hydrate accepts on any
provider, so what the sandbox's own commands planted is filtered here: no devices or fifos,
no symlink that points outside the workspace (the SDK refuses those on restore), nothing on
the session's skip list.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
from collections.abc import Iterable
from pathlib import Path

from agents.sandbox.util.tar_utils import should_skip_tar_member


def _symlink_stays_inside(member: tarfile.TarInfo) -> bool:
    target = member.linkname
    if target.startswith("/"):
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(member.name), target))
    return joined != ".." and not joined.startswith("../")


def pack(directory: Path, skip: Iterable[Path]) -> io.BytesIO:
    """`directory`'s contents as an uncompressed tar with members relative to it (`./...`)."""
    skipped = [p.as_posix() for p in skip]
    buf = io.BytesIO()

    def keep(member: tarfile.TarInfo) -> tarfile.TarInfo | None:
        # tarfile turns a second name of one inode into a hard link member, which the SDK's
        # extraction refuses: forget inodes so every name carries its own bytes.
        tar.inodes.clear()  # type: ignore[attr-defined]
        if member.name != "." and should_skip_tar_member(member.name, skip_rel_paths=skipped,
                                                         root_name=None):
            return None
        if member.isfifo() or member.ischr() or member.isblk():
            return None
        if member.issym() and not _symlink_stays_inside(member):
            return None
        # Owners are the host's copy's; the sandbox's user gets the files on hydrate.
        member.uid = member.gid = 0
        member.uname = member.gname = ""
        return member

    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(directory, arcname=".", filter=keep)
    buf.seek(0)
    return buf
