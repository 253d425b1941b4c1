"""Many files' text in one round trip, for turning a server's locations into the model's
columns and showing each location's line.

Only files inside the workspace root are read, resolved through symlinks (`readlink -f`): a
link inside the workspace that leads out of it is not followed. Each file is framed by its
size and a trailer; a file that changed size while it was read breaks the trailer, and the
caller then gets None for it (its locations keep the server's columns).
"""

from __future__ import annotations

from collections.abc import Mapping

from ..sandbox import Sandbox

#: Files larger than this are not read for their lines.
FILE_CAP = 4 << 20
#: The whole answer is bounded too: a reference list over hundreds of big files.
TOTAL_CAP = 64 << 20

READ_MANY = r"""
root=$(cd -P -- "$1" 2>/dev/null && pwd -P) || exit 3
cap=$2; shift 2
for f do
  r=$(readlink -f -- "$f" 2>/dev/null) || r=
  case $r in "$root"/*) ;; *) printf -- '-1\n'; continue ;; esac
  if [ -f "$r" ] && [ -r "$r" ] && s=$(wc -c < "$r" 2>/dev/null) && [ "$s" -le "$cap" ]; then
    printf '%d\n' "$s"; head -c "$s" -- "$r"; printf '\036\n'
  else
    printf -- '-1\n'
  fi
done
"""


def parse_many(data: bytes, paths: list[str]) -> dict[str, str | None]:
    """The texts READ_MANY printed, by path (None: not read, or changed while read)."""
    out: dict[str, str | None] = {}
    pos = 0
    for path in paths:
        newline = data.find(b"\n", pos)
        if newline < 0:
            break
        try:
            size = int(data[pos:newline])
        except ValueError:
            break
        pos = newline + 1
        if size < 0:
            out[path] = None
            continue
        body = data[pos:pos + size]
        if data[pos + size:pos + size + 2] != b"\036\n":
            break  # the file changed under the read: the frames after it cannot be trusted
        out[path] = body.decode("utf-8", "surrogateescape")
        pos += size + 2
    return {p: out.get(p) for p in paths}


async def read_many(sandbox: Sandbox, root: str, paths: list[str], *,
                    env: Mapping[str, str] | None = None) -> dict[str, str | None]:
    if not paths:
        return {}
    from ..tools.runner import run_script

    result = await run_script(sandbox, READ_MANY, [root, str(FILE_CAP), *paths],
                              name="lsp-read", env=env, timeout=60, limit=TOTAL_CAP)
    if result.exit_code != 0:
        return dict.fromkeys(paths)
    return parse_many(result.stdout, paths)
