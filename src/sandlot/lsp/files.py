"""Many files' text in one round trip, for turning a server's locations into the model's
columns and showing each location's line.

Only files inside the workspace root are read, and none through a symlink below the root: a
link inside the workspace that leads out of it is not followed. The sizes come first, then the
contents; a file that changed size while it was read breaks the sum, and the caller then gets
None (its locations keep the server's columns, the file is read again next time).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..sandbox import Sandbox
from .cache import Held, TextCache, known, parse_known

#: The whole answer is bounded: a reference list over hundreds of big files.
TOTAL_CAP = 64 << 20

# $1 root, $2 byte cap, then the files (absolute, lexically under the root: the caller checked).
# A file is read only if no component below the root is a symlink (tested with the shell's
# own `[ -L ]`), so no link leads the read out of the workspace. Three processes whatever the
# number of files (sh, stat, cat): this runs on every navigation call. Prints the kept files'
# 1-based indices, their sizes, then their contents back to back (up to the cap).
READ_MANY = r"""
root=$1; cap=$2; shift 2
inside() {
  rest=${1#"$root"/}
  [ "$rest" != "$1" ] || return 1
  p=$root
  while :; do
    c=${rest%%/*}
    p=$p/$c
    [ -L "$p" ] && return 1
    [ "$rest" = "$c" ] && return 0
    rest=${rest#*/}
  done
}
i=0; n=$#; keep=
for f do
  i=$((i + 1))
  if inside "$f" && [ -f "$f" ] && [ -r "$f" ]; then set -- "$@" "$f"; keep="$keep $i"; fi
done
shift "$n"
echo $keep
[ $# -gt 0 ] || exit 0
sizes=$(stat -c %s -- "$@") || exit 4
echo $sizes
n=$#; total=0
for s in $sizes; do
  f=$1; shift
  total=$((total + s))
  [ "$total" -le "$cap" ] && set -- "$@" "$f"
done
[ $# -gt 0 ] || exit 0
exec cat -- "$@"
"""


def parse_many(data: bytes, paths: list[str]) -> dict[str, str | None]:
    """The texts READ_MANY printed, by path (None: not read, too large, or changed while it
    was read: then the sizes do not add up and nothing is trusted)."""
    out: dict[str, str | None] = dict.fromkeys(paths)
    first, _, rest = data.partition(b"\n")
    try:
        kept = [paths[int(i) - 1] for i in first.split()]
        if not kept:
            return out
        second, _, body = rest.partition(b"\n")
        sizes = [int(s) for s in second.split()]
    except (ValueError, IndexError):
        return out
    if len(sizes) != len(kept):
        return out
    spans: list[tuple[str, int, int]] = []
    offset = 0
    for path, size in zip(kept, sizes, strict=True):
        if offset + size > len(body):
            break  # past the cap: this file and the rest were not printed
        spans.append((path, offset, offset + size))
        offset += size
    if offset != len(body):
        return out  # a file changed size while it was read: no offset can be trusted
    for path, begin, finish in spans:
        out[path] = body[begin:finish].decode("utf-8", "surrogateescape")
    return out


async def read_many(sandbox: Sandbox, root: str, paths: list[str], *,
                    env: Mapping[str, str] | None = None,
                    cache: TextCache | None = None) -> dict[str, str | None]:
    """READ_MANY's texts, served by the sandbox's session helper (its `read_many`, the same
    output without the script's three process starts: a warm navigation call then costs about
    the server's own time), else by the script. With `cache`, the files it holds are not sent
    again while unchanged (lsp/cache.py), and it holds what was read."""
    if not paths:
        return {}
    from ..tools.runner import run_op_in_session, run_script

    root = root.rstrip("/") or "/"
    limit = TOTAL_CAP + 65536
    args: dict[str, object] = {"root": root, "cap": TOTAL_CAP, "paths": paths}
    # What the cache holds now: another call may replace an entry while this one waits.
    held = [cache.get(p) for p in paths] if cache is not None else None
    if held is not None:
        args["known"] = known(held)
    result = await run_op_in_session(sandbox, "read_many", args, name="lsp-read", env=env,
                                     timeout=60, limit=limit)
    served = result is not None
    if result is None:
        result = await run_script(sandbox, READ_MANY, [root, str(TOTAL_CAP), *paths],
                                  name="lsp-read", env=env, timeout=60, limit=limit)
    if result.exit_code != 0 or result.truncated:
        texts: dict[str, str | None] = dict.fromkeys(paths)
        keep: dict[str, Held] = {}
    elif held is not None and served:
        texts, keep = parse_known(result.stdout, paths, held)
    else:  # the script: every file printed, no fingerprints or digests to hold
        texts, keep = parse_many(result.stdout, paths), {}
    if cache is not None:
        for path in paths:
            entry = keep.get(path)
            if entry is None:
                cache.forget(path)
            else:
                cache.keep(path, entry)
    return texts
