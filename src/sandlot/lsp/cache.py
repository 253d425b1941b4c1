"""The texts a navigation call read before, so that the next one is not sent them again.

Every warm call reads its file and the files of recent answers in one session-helper round
trip (files.read_many): a command of the agent may change any file at any time, so the round
trip stays. What it carries shrinks: the host sends what it holds of each file, and the
helper answers with a stat where a stat proves the file unchanged, else reads the file and
prints it only when its digest differs from the one held.

A stat proves a file unchanged by its fingerprint (device, inode, size, mtime and ctime in
ns): a write moves ctime, which no program can set back. But timestamps have a granularity
(a clock tick on Linux, a second or two on some filesystems): a write in the same tick as the
read would leave the fingerprint as it was. So a fingerprint is given back only for a text
read when the file's ctime was older than the helper's clock by more than RACY_NS (git's
"racily clean" rule): any later write then stamps a later ctime. A file changed more recently
is read and hashed again (sha256), and still not sent when its digest is the one held.
"""

from __future__ import annotations

#: At least the coarsest timestamp granularity expected (FAT's two seconds).
RACY_NS = 2_000_000_000

#: What the cache holds of a file: (fingerprint, or None while a stat proves nothing; the
#: digest of its bytes; its text).
Held = tuple[str | None, str, str]


class TextCache:
    """Texts by path, bounded by the characters kept (the oldest go first)."""

    def __init__(self, limit: int = 16 << 20) -> None:
        self.limit = limit
        self._entries: dict[str, Held] = {}
        self._kept = 0

    def get(self, path: str) -> Held | None:
        return self._entries.get(path)

    def forget(self, path: str) -> None:
        entry = self._entries.pop(path, None)
        if entry is not None:
            self._kept -= len(entry[2])

    def keep(self, path: str, entry: Held) -> None:
        self.forget(path)
        if len(entry[2]) > self.limit // 4:
            return
        while self._entries and self._kept + len(entry[2]) > self.limit:
            self.forget(next(iter(self._entries)))
        self._entries[path] = entry
        self._kept += len(entry[2])


def known(held: list[Held | None]) -> list[list[str | None] | None]:
    """The helper's `known` argument: [fingerprint or None, digest] per path, or None."""
    return [[h[0], h[1]] if h is not None else None for h in held]


def parse_known(data: bytes, paths: list[str], held: list[Held | None]
                ) -> tuple[dict[str, str | None], dict[str, Held]]:
    """The texts the helper's read_many with `known` stands for (the held text where it said
    the file is unchanged), and what to hold from now on, by path (a file missing from it is
    forgotten). Anything malformed, or sizes that do not add up (a file changed size while it
    was read), and nothing is trusted: every text None, nothing held."""
    out: dict[str, str | None] = dict.fromkeys(paths)
    first, _, rest = data.partition(b"\n")
    try:
        indices = [int(i) - 1 for i in first.split()]
        if not indices or min(indices) < 0:
            return out, {}
        second, _, rest = rest.partition(b"\n")
        sizes = [int(s) for s in second.split()]
        third, _, body = rest.partition(b"\n")
        stamp, *tokens = third.decode("ascii").split()
        now = int(stamp)
        if not len(indices) == len(sizes) == len(tokens):
            return out, {}
        keep: dict[str, Held] = {}
        offset = 0
        for index, size, token in zip(indices, sizes, tokens, strict=True):
            path, had = paths[index], held[index]
            fingerprint, _, digest = token.partition(":")
            if digest == "-":
                continue  # past the cap: not read
            if digest == "":  # a stat proved it unchanged
                if had is None or had[0] != fingerprint:
                    return dict.fromkeys(paths), {}  # not a fingerprint we gave
                digest, text = had[1], had[2]
            elif had is not None and digest == had[1]:  # read again: the same bytes
                text = had[2]
            else:
                text = body[offset:offset + size].decode("utf-8", "surrogateescape")
                offset += size
            out[path] = text
            ctime = int(fingerprint.rsplit(".", 1)[1])
            # Read (or proven unchanged) at `now`: its fingerprint proves something next
            # time only if no write can have come in the same tick as the last one.
            keep[path] = (fingerprint if ctime < now - RACY_NS else None, digest, text)
    except (ValueError, IndexError, UnicodeDecodeError):
        return dict.fromkeys(paths), {}
    if offset != len(body):
        return dict.fromkeys(paths), {}
    return out, keep
