"""The sandbox-side half of each tool: one POSIX sh script per call, one round trip.

Only POSIX sh and what coreutils and busybox both have are used (`cd -P`, `readlink -f`,
`head -c`, `tail -n +N`, `wc`, `tr`, `find`, `grep -E`, `sort`, `awk`, `xargs -0 -r`,
`md5sum`). Every path arrives as a positional parameter, never spliced into the script.

Each script first runs `resolve ROOT TARGET` (the second containment layer): it resolves the
lexically contained TARGET with the sandbox's own symlink view -- the deepest existing
ancestor through `cd -P` or `readlink -f`, plus the missing tail -- and refuses a result
outside the root's real path. The operation then uses that resolved path `$P`, so a symlink
inside the root that points elsewhere inside the root keeps working.

Exit codes 70-89 are ours: `Exit` is their one table (the scripts say `fail @NAME@`, filled
in from it at import); the detail is the last line on stderr.
"""

from __future__ import annotations

import re
from enum import IntEnum


class Exit(IntEnum):
    """Our exit codes, so Python can raise the right typed error with its own words."""

    ROOT_MISSING = 70
    UNRESOLVABLE = 71
    ESCAPES = 72
    NOT_A_DIRECTORY = 73
    NOT_FOUND = 74
    IS_A_DIRECTORY = 75
    NOT_A_FILE = 76
    BINARY = 79
    EXISTS_NOT_READ = 80
    CHANGED = 81
    MKDIR_FAILED = 82
    WRITE_FAILED = 83
    TOO_LARGE = 84
    BAD_PATTERN = 85
    PERMISSION_DENIED = 86


_CODE = re.compile(r"@([A-Z_]+)@")


def _codes(script: str) -> str:
    """`script` with each `@NAME@` replaced by `Exit.NAME`'s number: the scripts take their
    codes from the table above, so the two cannot disagree (an unknown name fails the import).
    safe_helper.py, which runs without sandlot, is checked against the table by
    tests/unit/test_exit_codes.py instead."""
    return _CODE.sub(lambda m: str(int(Exit[m.group(1)])), script)


PRELUDE = _codes(r"""
unset CDPATH
fail() { code=$1; shift; printf '%s\n' "$*" >&2; exit "$code"; }
resolve() {
  R=$(cd -P -- "$1" 2>/dev/null && pwd -P) || fail @ROOT_MISSING@ "$1"
  t=$2; rest=; hops=0
  while :; do
    hops=$((hops + 1)); [ "$hops" -le 40 ] || fail @UNRESOLVABLE@ "$t"
    while [ ! -e "$t" ] && [ ! -L "$t" ]; do
      rest=/${t##*/}$rest; t=${t%/*}; [ -n "$t" ] || t=/
    done
    if [ -d "$t" ]; then
      c=$(cd -P -- "$t" 2>/dev/null && pwd -P) || fail @UNRESOLVABLE@ "$t"
      break
    fi
    c=$(readlink -f "$t" 2>/dev/null) || c=
    if [ -n "$c" ] && [ -z "$rest" ]; then break; fi
    if [ -n "$c" ] && [ -e "$t" ]; then fail @NOT_A_DIRECTORY@ "$t"; fi  # a file, a path below it
    if [ -n "$c" ]; then t=$c$rest; rest=; continue; fi   # dangling link, path below it
    # A dangling symlink whose target's directory is missing too: follow it by hand.
    [ -L "$t" ] || fail @UNRESOLVABLE@ "$t"
    l=$(readlink "$t") || fail @UNRESOLVABLE@ "$t"
    case $l in /*) ;; *) l=${t%/*}/$l ;; esac
    t=$l$rest; rest=
  done
  # Missing components come from our own (normalised) path or from a link target; a `..`
  # among them would be applied only once the directories exist: refuse it.
  case "$rest/" in */../*|*/./*) fail @ESCAPES@ "$t$rest" ;; esac
  [ "$c" = / ] && c=
  P=$c$rest; [ -n "$P" ] || P=/
  case "$P/" in "${R%/}"/*) ;; *) fail @ESCAPES@ "$P" ;; esac
}
is_binary() {
  n=$(($(head -c 8192 "$1" | wc -c))); k=$(($(head -c 8192 "$1" | tr -d '\000' | wc -c)))
  [ "$n" -ne "$k" ]
}
digest() { md5sum 2>/dev/null || cksum; }
""")

# Prints the resolved path (tests and callers that need the sandbox's view of a path).
RESOLVE = PRELUDE + _codes(r"""
resolve "$1" "$2"
printf '%s' "$P"
""")

# $3 the token of an interrupted write: removes its temp file (best effort).
DISCARD = PRELUDE + _codes(r"""
resolve "$1" "$2"
dir=${P%/*}; [ -n "$dir" ] || dir=/
rm -f -- "$dir/.sandlot-write.$3.tmp"
""")

# $3 first line (1-based), $4 line count, $5 byte cap. Prints "SIZE LINES\n" then the page.
READ = PRELUDE + _codes(r"""
resolve "$1" "$2"
[ -e "$P" ] || fail @NOT_FOUND@ "$P"
[ -d "$P" ] && fail @IS_A_DIRECTORY@ "$P"
[ -f "$P" ] || fail @NOT_A_FILE@ "$P"
size=$(wc -c < "$P") || fail @NOT_A_FILE@ "$P"
size=$((size))
is_binary "$P" && fail @BINARY@ "$size"
lines=$(($(wc -l < "$P")))
if [ "$size" -gt 0 ] && [ "$(tail -c 1 "$P" | wc -l)" -eq 0 ]; then lines=$((lines + 1)); fi
printf '%s %s\n' "$size" "$lines"
tail -n "+$3" "$P" | head -n "$4" | head -c "$5"
""")

# $3 byte cap. Prints "DIGEST\n" then the whole file (for edit's read-modify-write).
SLURP = PRELUDE + _codes(r"""
resolve "$1" "$2"
[ -e "$P" ] || fail @NOT_FOUND@ "$P"
[ -d "$P" ] && fail @IS_A_DIRECTORY@ "$P"
[ -f "$P" ] || fail @NOT_A_FILE@ "$P"
size=$(($(wc -c < "$P")))
[ "$size" -le "$3" ] || fail @TOO_LARGE@ "$size"
is_binary "$P" && fail @BINARY@ "$size"
d=$(digest < "$P")
printf '%s\n' "$d"
cat "$P"
""")

# The raw bytes of a file, binary or not (adapters that hand files over whole, e.g. the Deep
# Agents backend's download_files). $3 byte cap. A file nobody may read (no r bit) is refused
# even to root, as the file API of an agent framework expects.
FETCH = PRELUDE + _codes(r"""
resolve "$1" "$2"
[ -e "$P" ] || fail @NOT_FOUND@ "$P"
[ -d "$P" ] && fail @IS_A_DIRECTORY@ "$P"
[ -f "$P" ] || fail @NOT_A_FILE@ "$P"
case $(ls -ln -- "$P") in ?---------*) fail @PERMISSION_DENIED@ "$P" ;; esac
[ -r "$P" ] || fail @PERMISSION_DENIED@ "$P"
size=$(($(wc -c < "$P")))
[ "$size" -le "$3" ] || fail @TOO_LARGE@ "$size"
cat "$P"
""")

# One directory's entries ($3 = 1) or the whole tree below it ($3 = 0), for listings that need
# directories too (the Deep Agents backend's ls and glob). $4 byte bound. Prints "\036d\0", the
# directories, "\036f\0", everything else: "./"-prefixed paths, NUL-terminated, sorted (a
# marker never starts with "./", so no name can pass for one).
LIST = PRELUDE + _codes(r"""
resolve "$1" "$2"
[ -e "$P" ] || fail @NOT_FOUND@ "$P"
[ -d "$P" ] || fail @NOT_A_DIRECTORY@ "$P"
[ "$2" = . ] || cd -P -- "$P" || fail @UNRESOLVABLE@ "$P"
if [ "$3" = 1 ]; then depth="-maxdepth 1"; else depth=; fi
{ printf '\036d\000'; find . -mindepth 1 $depth -type d -print0 2>/dev/null | LC_ALL=C sort -z
  printf '\036f\000'; find . -mindepth 1 $depth ! -type d -print0 2>/dev/null | LC_ALL=C sort -z
} | head -c "$4"
""")

# $3 "any" (overwrite allowed) or "new" (must not exist), $4 expected digest or "",
# $5 a random token for the temp name. Content on stdin. Prints "EXISTED BYTES".
WRITE = PRELUDE + _codes(r"""
resolve "$1" "$2"
[ -d "$P" ] && { cat >/dev/null; fail @IS_A_DIRECTORY@ "$P"; }
existed=0
if [ -e "$P" ]; then
  existed=1
  [ -f "$P" ] || { cat >/dev/null; fail @NOT_A_FILE@ "$P"; }
  [ "$3" = any ] || { cat >/dev/null; fail @EXISTS_NOT_READ@ "$P"; }
  if [ -n "$4" ]; then
    d=$(digest < "$P"); [ "$d" = "$4" ] || { cat >/dev/null; fail @CHANGED@ "$P"; }
  fi
fi
dir=${P%/*}; [ -n "$dir" ] || dir=/
mkdir -p -- "$dir" 2>/dev/null || { cat >/dev/null; fail @MKDIR_FAILED@ "$dir"; }
tmp=$dir/.sandlot-write.$5.tmp
trap 'rm -f -- "$tmp"' EXIT
trap 'exit 129' HUP INT TERM PIPE
cat > "$tmp" || fail @WRITE_FAILED@ "$P"
if [ "$existed" = 1 ]; then
  mode=$(stat -c %a "$P" 2>/dev/null) && chmod "$mode" "$tmp" 2>/dev/null
fi
mv -f -- "$tmp" "$P" || fail @WRITE_FAILED@ "$P"
printf '%s %s\n' "$existed" "$(($(wc -c < "$P")))"
""")

# Many files in one call ($3 a token). Stdin: a tar whose members are `paths` (one absolute
# target per line: the host refuses names with control characters), `modes` (octal per line,
# or "-" to keep an existing file's) and file i's data as `i`. It is unpacked into a private
# staging directory, then each file is checked and moved into place in a subshell (so `fail`
# ends that file, not the batch); prints one exit code per file (0: written). A tar, not a
# framed stream: `tar -x` reads exactly its archive where busybox `head -c` reads ahead.
# safe_helper.py's op_write_many replaces it where python3 is.
WRITE_MANY = PRELUDE + _codes(r"""
root=$1; token=$3; i=0
stage=$(mktemp -d "${TMPDIR:-/tmp}/sandlot-batch.XXXXXX") ||
  { cat >/dev/null; exit @WRITE_FAILED@; }
trap 'rm -rf -- "$stage"' EXIT
trap 'exit 129' HUP INT TERM PIPE
tar -xof - -C "$stage" || exit @WRITE_FAILED@
while IFS= read -r p <&3 && IFS= read -r fmode <&4; do
  (
    resolve "$root" "$p"
    [ -d "$P" ] && fail @IS_A_DIRECTORY@ "$P"
    [ -e "$P" ] && { [ -f "$P" ] || fail @NOT_A_FILE@ "$P"; }
    dir=${P%/*}; [ -n "$dir" ] || dir=/
    mkdir -p -- "$dir" 2>/dev/null || fail @MKDIR_FAILED@ "$dir"
    tmp=$dir/.sandlot-write.$token.$i.tmp
    mv -f -- "$stage/$i" "$tmp" 2>/dev/null || { rm -f -- "$tmp"; fail @WRITE_FAILED@ "$P"; }
    if [ "$fmode" != - ]; then
      chmod "$fmode" "$tmp" 2>/dev/null || { rm -f -- "$tmp"; fail @WRITE_FAILED@ "$P"; }
    elif [ -e "$P" ]; then
      mode=$(stat -c %a "$P" 2>/dev/null) && chmod "$mode" "$tmp" 2>/dev/null
    fi
    mv -f -- "$tmp" "$P" 2>/dev/null || { rm -f -- "$tmp"; fail @WRITE_FAILED@ "$P"; }
  ) 2>/dev/null
  printf '%s\n' "$?"
  i=$((i + 1))
done 3<"$stage/paths" 4<"$stage/modes"
""")

# Shared by glob and grep: `list0` prints the regular files under "." as NUL-terminated
# "./"-prefixed paths, skipping directories named in $EXCLUDES (slash-separated); ripgrep when
# $USE_RG=1 and rg is installed (`pick_engine` sets ENGINE=rg), else find. Names travel
# NUL-terminated from the lister to the search (grep -z, sort -z, xargs -0): a newline in a
# name is just a byte. The "./" prefix keeps a file named "-" (or "-x") from being read as
# standard input or an option.
_LIST = r"""
pick_engine() {
  ENGINE=find
  if [ "$USE_RG" = 1 ] && command -v rg >/dev/null 2>&1; then ENGINE=rg; fi
}
list0() {
  saved=$IFS; IFS=/; set -f; set -- $EXCLUDES; set +f; IFS=$saved
  n=$#
  if [ "$ENGINE" = rg ]; then
    for x do set -- "$@" -g "!$x"; done; shift "$n"
    rg --no-config --files --hidden --no-ignore --no-messages --null "$@" -- . 2>/dev/null
  else
    first=1
    for x do
      if [ "$first" = 1 ]; then set -- "$@" -name "$x"; first=0; else set -- "$@" -o -name "$x"; fi
    done
    shift "$n"
    if [ "$#" -gt 0 ]; then find . \( "$@" \) -prune -o -type f -print0 2>/dev/null
    else find . -type f -print0 2>/dev/null; fi
  fi
}
# $1: an ERE anchored as ^(...)$ over paths without "./".
select0() { if [ -n "$1" ]; then LC_ALL=C grep -z -E -e "^\./${1#^}"; else cat; fi; }
"""

# $3 filter ERE ("" = all), $4 byte bound of the output, $5 use rg (1/0), $6 excluded dir
# names. Prints "\036engine NAME\0" then every matching path, NUL-terminated, sorted; the
# caller counts and caps them.
GLOB = PRELUDE + _LIST + _codes(r"""
USE_RG=$5; EXCLUDES=$6; pick_engine
resolve "$1" "$2"
[ -e "$P" ] || fail @NOT_FOUND@ "$P"
[ -d "$P" ] || fail @NOT_A_DIRECTORY@ "$P"
# "." is a directory the race-free helper already entered: do not look it up by name again.
[ "$2" = . ] || cd -P -- "$P" || fail @UNRESOLVABLE@ "$P"
printf '\036engine %s\000' "$ENGINE"
list0 | select0 "$3" | LC_ALL=C sort -z | head -c "$4"
""")

# $3 pattern for rg, $4 pattern for grep -E, $5 file filter ERE, $6 "i" to ignore case,
# $7 context lines, $8 byte bound of the output (head -c: linear, however long a line is),
# $9 use rg (1/0), ${10} excluded dir names. The caller counts and caps lines.
# rg: its JSON lines (names JSON-encoded). grep: per file "\036F<name>\0" then `grep -n` lines,
# "\036B<name>\0" for a binary file. Both engines read every file as bytes (grep -a; our own
# NUL test decides what is binary), so invalid UTF-8 matches alike.
GREP = PRELUDE + _LIST + _codes(r"""
USE_RG=$9; EXCLUDES=${10}; CTX=$7; SELECT=$5; pick_engine
resolve "$1" "$2"
[ -e "$P" ] || fail @NOT_FOUND@ "$P"
if [ "$6" = i ]; then ICASE=-i; else ICASE=; fi
if [ "$ENGINE" = rg ]; then
  PAT=$3
  err=$(printf '\n' | rg --no-config $ICASE -e "$PAT" 2>&1 >/dev/null)
  [ $? -eq 2 ] && fail @BAD_PATTERN@ "$err"
else
  PAT=$4
  err=$(printf '\n' | grep -E $ICASE -e "$PAT" 2>&1 >/dev/null)
  [ $? -eq 2 ] && fail @BAD_PATTERN@ "$err"
fi
if [ -d "$P" ]; then
  [ "$2" = . ] || cd -P -- "$P" || fail @UNRESOLVABLE@ "$P"
  # SELECT, not "$5": inside a function "$5" is the function's own (empty) argument.
  files0() { list0 | select0 "$SELECT" | LC_ALL=C sort -z; }
else
  cd -P -- "${P%/*}/" || fail @UNRESOLVABLE@ "$P"
  base=${P##*/}
  files0() { printf './%s\000' "$base"; }
fi
printf '\036engine %s\n' "$ENGINE"
if [ -d "$P" ]; then printf '\036kind dir\n'; else printf '\036kind file\n'; fi
if [ "$ENGINE" = rg ]; then
  files0 | xargs -0 -r rg --no-config --json --sort path $ICASE -C "$CTX" -e "$PAT" -- \
    2>/dev/null
else
  export ICASE PAT CTX
  # Each matching file: its header, then its lines. `grep -lZ` (GNU) picks the matching files
  # in one process per batch; without -Z (busybox) each file is tested on its own.
  show() {
    xargs -0 -r sh -c '
      for f do
        [ -n "$TEST" ] && { grep -q -a -E $ICASE -e "$PAT" -- "$f" 2>/dev/null || continue; }
        n=$(($(head -c 8192 "$f" | wc -c))); k=$(($(head -c 8192 "$f" | tr -d "\000" | wc -c)))
        if [ "$n" -ne "$k" ]; then printf "\036B%s\000" "$f"; continue; fi
        printf "\036F%s\000" "$f"
        if [ "$CTX" -gt 0 ]; then grep -n -a -E $ICASE -C "$CTX" -e "$PAT" -- "$f"
        else grep -n -a -E $ICASE -e "$PAT" -- "$f"; fi
      done' sh
  }
  if printf 'x\n' | grep -l -Z x >/dev/null 2>&1; then
    TEST=; export TEST
    files0 | xargs -0 -r grep -l -Z -a -E $ICASE -e "$PAT" -- 2>/dev/null | show
  else
    TEST=1; export TEST
    files0 | show
  fi
fi | head -c "$8"
""")
