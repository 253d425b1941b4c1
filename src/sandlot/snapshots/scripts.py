"""The POSIX sh scripts that take, list, restore and compare snapshots inside a sandbox.

The store is a git repository of sandlot's own at `<worktree>/.sandlot/snapshots/git`, driven
with GIT_DIR / GIT_INDEX_FILE / GIT_WORK_TREE so the user's `.git`, index, branches and stash
are never read or written (adr/0046). Each root keeps a persistent index of its own under
`idx/<key>`: it is only git's stat cache, so a second snapshot hashes only what changed. A
snapshot is a commit whose tree holds, per root `<n>`, `r<n>` (the files: contents, the
executable bit, symlinks) and `e<n>` (the NUL-separated list of empty directories, which git
does not keep), plus `meta` (JSON written by the host). It is listed once the ref
`refs/sandlot/snapshots/<id>` points at it, and that ref is written last: a snapshot that
failed half-way (a full disk) is never listed.

Every script starts with `PRELUDE`. Positional parameters: $1 the state directory
(`<worktree>/.sandlot`), $2 the roots as `key:base64(path)` words, $3 `-f` to include ignored
files (else `-`), then script-specific ones, then (after `shift`) the pathspecs.
"""

from __future__ import annotations

#: Programs every script needs (besides sh); a sandbox without one gets a typed error naming it.
TOOLS = ("git", "find", "xargs", "tr", "awk", "base64", "mkdir", "rmdir", "cat", "ls")

#: Exit statuses the scripts use for what the host must tell apart.
TOOLS_MISSING = 127
NO_STORE = 4
NO_ROOT = 5
NO_SNAPSHOT = 6
REF_EXISTS = 7
FOREIGN_STORE = 8

PRELUDE = r"""
set -u
missing=
for t in """ + " ".join(TOOLS) + r"""; do
  command -v "$t" >/dev/null 2>&1 || missing="$missing $t"
done
[ -z "$missing" ] || { echo "missing:$missing" >&2; exit 127; }
state=$1 st=$1/snapshots; g=$1/snapshots/git; roots=$2; addf=
[ "$3" = -f ] && addf=-f
# The user's git configuration never applies: no filters, hooks, autocrlf or fsmonitor of
# theirs may change what is recorded (info/attributes below turns off the work tree's too).
export GIT_DIR="$g" HOME="$st" XDG_CONFIG_HOME="$st" GIT_CONFIG_NOSYSTEM=1
export GIT_TERMINAL_PROMPT=0 GIT_OPTIONAL_LOCKS=0 LC_ALL=C
export GIT_AUTHOR_NAME=sandlot GIT_AUTHOR_EMAIL=sandlot@sandbox.invalid
export GIT_COMMITTER_NAME=sandlot GIT_COMMITTER_EMAIL=sandlot@sandbox.invalid
unset GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_ALTERNATE_OBJECT_DIRECTORIES \
  GIT_NAMESPACE GIT_COMMON_DIR GIT_CEILING_DIRECTORIES GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT
std=--exclude-standard
[ -n "$addf" ] && std=
# `git $bulk add` streams every file it hashes into one pack per call (git's bulk check-in,
# taken for any file over core.bigFileThreshold) instead of a loose object file each: one
# file written instead of thousands (adr/0046); it matters where packer.py cannot run. Only
# `add` gets it: for diff, a blob over the threshold would count as binary.
bulk="-c core.bigFileThreshold=1"
packer= many=
# stage PATHSPEC...: what `git add -A` does. Where python3 is and much has changed, packer.py
# first hashes the new and changed files into one pack and enters them into the index with
# their stat (git's collision-detecting SHA-1 is most of a large snapshot's cost, adr/0056);
# `git add -A` then finds them clean, and does everything, the same way, where the packer did
# nothing.
stage() {
  if [ -n "$packer" ] && command -v python3 >/dev/null 2>&1; then
    changed=$st/changed.$$
    git ls-files -z -o -m $std -- "$@" > "$changed" || { rm -f "$changed"; return 1; }
    if worth "$changed"; then
      python3 -I -S -c "$packer" < "$changed"
      s=$?
      [ "$s" -eq 28 ] && { rm -f "$changed"; return 1; }  # the disk is full (it said so)
      [ "$s" -eq 0 ] || [ "$s" -eq 3 ] ||
        echo "sandlot: the snapshot packer failed (exit $s); git hashed the files" >&2
    fi
    rm -f "$changed"
  fi
  git $bulk add -A $addf -- "$@" && return 0
  # git leaves the pack it was writing (a full disk): nothing half-written stays.
  [ -z "$held" ] || rm -f "$g"/objects/pack/tmp_*
  return 1
}
# worth FILE: whether the NUL-separated names in FILE are at least $many ("<files> <bytes>")
# in number or in bytes. Fewer stay with git: starting python3 and rewriting the index would
# cost more than git's hashing of them.
worth() {
  n=$(tr '\000\n' '\n?' < "$1" | awk 'END { print NR }')
  [ "$n" -gt 0 ] || return 1
  [ "$n" -ge "${many% *}" ] && return 0
  b=$(xargs -0 stat -c %s -- < "$1" 2>/dev/null | awk '{ s += $1 } END { printf "%.0f", s }')
  [ "${b:-0}" -ge "${many#* }" ]
}
# enter N: make root number N the work tree (cwd, GIT_WORK_TREE, its index).
enter() {
  n=0
  for spec in $roots; do
    if [ "$n" -eq "$1" ]; then
      key=${spec%%:*}
      root=$(printf '%s' "${spec#*:}" | base64 -d) || return 1
      cd -- "$root" 2>/dev/null || { echo "no such directory: $root" >&2; exit 5; }
      export GIT_WORK_TREE="$root" GIT_INDEX_FILE="$st/idx/$key"
      return 0
    fi
    n=$((n + 1))
  done
  return 1
}
count() { n=0; for spec in $roots; do n=$((n + 1)); done; echo "$n"; }
need_store() { [ -s "$g/sandlot-store" ] || { echo "no snapshot store at $g" >&2; exit 4; }; }
# hold: one script that writes the store at a time (flock on fd 9, where the sandbox has
# flock; the kernel lets go when the script ends in any way, killed included). Holding it, an
# index lock or a temporary pack in the store was left by a git or packer that was killed (a
# cancelled call): it is removed, else every later snapshot would fail on the lock.
held=
hold() {
  command -v flock >/dev/null 2>&1 || return 0
  { exec 9>"$st/lock" && flock 9; } 2>/dev/null || return 0
  held=1
  rm -f "$st"/idx/*.lock "$g"/objects/pack/tmp_* || :
}
"""

#: $4 the store id to use if the store is new  $5 the snapshot id  $6 its meta JSON  $7
#: packer.py's source  $8 when to use it (`<files> <bytes>`). Prints `<store id> <commit>
#: <files> <bytes>`.
TAKE = PRELUDE + r"""
candidate=$4 id=$5 meta=$6 packer=$7 many=$8; shift 8
[ -e "$state/.gitignore" ] || { mkdir -p "$state" && printf '*\n' > "$state/.gitignore"; } ||
  exit 3
mkdir -p "$st/idx" || exit 3
hold
if [ ! -s "$g/sandlot-store" ]; then
  # No template (its sample hooks are files to create, and none may run); the settings in
  # one write (a `git config` per key cost 30 ms of a first snapshot). The later value wins.
  git init -q --template= >/dev/null && mkdir -p "$g/info" || exit 3
  printf '[core]\n\t%s\n\t%s\n\t%s\n\t%s\n\t%s\n\t%s\n\t%s\n\t%s\n\t%s\n\t%s\n' \
    'autocrlf = false' 'symlinks = true' 'filemode = true' 'bare = false' \
    'precomposeunicode = false' 'ignorecase = false' 'quotepath = false' 'compression = 0' \
    'loosecompression = 0' 'fsync = none' >> "$g/config" &&
  printf '[gc]\n\tauto = 0\n[pack]\n\tcompression = 0\n' >> "$g/config" || exit 3
  printf '.sandlot/\n' > "$g/info/exclude" &&
  printf '* -text -filter -ident -working-tree-encoding\n' > "$g/info/attributes" &&
  printf '%s\n' "$candidate" > "$g/sandlot-store.tmp" &&
  mv -f "$g/sandlot-store.tmp" "$g/sandlot-store" || exit 3
fi
store=$(cat "$g/sandlot-store") || exit 3
git rev-parse -q --verify "refs/sandlot/snapshots/$id" >/dev/null && exit 7
entries= files=0 bytes=0 i=0 total=$(count)
while [ "$i" -lt "$total" ]; do
  enter "$i" || exit 1
  stage "$@" || exit 1
  t=$(git write-tree) || exit 1
  e=$(git ls-files -z -o --directory $std -- "$@" |
      xargs -0 -r sh -c 'for d; do find "./$d" -type d -empty -print0; done' sh |
      git hash-object -w --stdin) || exit 1
  c=$(git ls-tree -r -l -z "$t" | tr '\n\000' '?\n' |
      awk '{ n++; if ($4 ~ /^[0-9]+$/) s += $4 } END { printf "%d %.0f\n", n, s }') || exit 1
  files=$((files + ${c%% *})); bytes=$((bytes + ${c#* }))
  entries="${entries}040000 tree $t	r$i
100644 blob $e	e$i
"
  i=$((i + 1))
done
m=$(printf '%s' "$meta" | git hash-object -w --stdin) || exit 1
top=$(printf '%s100644 blob %s	meta\n' "$entries" "$m" | git mktree) || exit 1
commit=$(printf 'sandlot snapshot %s %s\n' "$files" "$bytes" | git commit-tree "$top") || exit 1
git update-ref "refs/sandlot/snapshots/$id" "$commit" "" || exit 1
echo "$store $commit $files $bytes"
"""

#: Prints the store id, then one line per snapshot `<id> <commit> sandlot snapshot <files>
#: <bytes>`, then `--`, then `git cat-file --batch` of every snapshot's meta blob, in order.
LIST = PRELUDE + r"""
[ -s "$g/sandlot-store" ] || { echo none; exit 0; }
cat "$g/sandlot-store" || exit 1
git for-each-ref --format='%(refname:lstrip=3) %(objectname) %(contents:subject)' \
  refs/sandlot/snapshots/ > "$st/list.$$" || { rm -f "$st/list.$$"; exit 1; }
cat "$st/list.$$"; echo --
awk '{ print $2 ":meta" }' < "$st/list.$$" | git cat-file --batch
s=$?; rm -f "$st/list.$$"; exit $s
"""

#: $4 the snapshot's commit, $5 the store id it was taken in, $6 its id. Puts every root
#: back: files first (git read-tree -u removes what was added since and rewrites only what
#: differs), then empty directories: those made since are removed (only empty ones: nothing
#: with a file in it, ignored or not, is touched), the snapshot's own made again.
RESTORE = PRELUDE + r"""
commit=$4 store=$5 id=$6; shift 6
need_store
hold
[ "$(cat "$g/sandlot-store")" = "$store" ] || exit 8
[ "$(git rev-parse -q --verify "refs/sandlot/snapshots/$id")" = "$commit" ] || exit 6
i=0 total=$(count)
while [ "$i" -lt "$total" ]; do
  enter "$i" || exit 1
  # Files made since enter the index as intents to add (nothing hashed or written: a restore
  # works on a full disk), so read-tree removes them; files changed or deleted since are
  # rewritten because their stat no longer matches the index.
  git ls-files -z -o $std -- "$@" | xargs -0 -r git add -N $addf -- || exit 1
  # Four checkout workers (git's parallel checkout; an older git ignores the key): writing
  # thousands of files waits on the file system more than on a core, and one writer left
  # a whole-tree restore slower than a tar pipe on a busy machine (adr/0046).
  git -c checkout.workers=4 read-tree --reset -u "$commit:r$i" || exit 1
  git ls-files -z -o --directory $std -- "$@" |
    xargs -0 -r sh -c 'for d; do find "./$d" -depth -type d -empty -exec rmdir -- {} \; ; done' sh
  git cat-file blob "$commit:e$i" | xargs -0 -r mkdir -p -- || exit 1
  i=$((i + 1))
done
"""

#: $4 $5 $6 as for RESTORE, $7 $8 as for TAKE. Per root: a line with base64 of `git diff
#: --name-status -z`, a line with base64 of the binary patch (snapshot -> now).
DIFF = PRELUDE + r"""
commit=$4 store=$5 id=$6 packer=$7 many=$8; shift 8
need_store
hold
[ "$(cat "$g/sandlot-store")" = "$store" ] || exit 8
[ "$(git rev-parse -q --verify "refs/sandlot/snapshots/$id")" = "$commit" ] || exit 6
i=0 total=$(count) tmp=$st/diff.$$
trap 'rm -f "$tmp"' EXIT
while [ "$i" -lt "$total" ]; do
  enter "$i" || exit 1
  stage "$@" || exit 1
  now=$(git write-tree) || exit 1
  pre=
  [ "$total" -gt 1 ] && pre="$i/"
  git diff --no-renames --no-ext-diff --no-textconv --name-status -z "$commit:r$i" "$now" \
    > "$tmp" || exit 1
  base64 < "$tmp" | tr -d '\n'; echo
  git diff --no-renames --no-ext-diff --no-textconv --no-color --binary \
    --src-prefix="a/$pre" --dst-prefix="b/$pre" "$commit:r$i" "$now" > "$tmp" || exit 1
  base64 < "$tmp" | tr -d '\n'; echo
  i=$((i + 1))
done
"""

#: $@ the roots (absolute, no newline). Prints `<pid> <cwd|write> <command>` for every process
#: this script can see (not itself, nor its ancestors) that has a file under a root open for
#: writing (the `w` of a /proc fd link's mode), or that sandlot started (it holds a run mark)
#: and whose working directory is under a root.
HOLDERS = r"""
anc=" " p=$$
while [ -n "$p" ] && [ "$p" != 0 ]; do
  anc="$anc$p "
  p=$(awk '/^PPid:/ { print $2; exit }' "/proc/$p/status" 2>/dev/null)
done
want=
for r in "$@"; do
  real=$(cd -- "$r" 2>/dev/null && pwd -P) || continue
  want="$want$r
$real
"
done
export SNAP_ROOTS="$want" SNAP_ANC="$anc"
{ ls -l /proc/[0-9]*/cwd 2>/dev/null; ls -l /proc/[0-9]*/fd/ 2>/dev/null; } | awk '
  BEGIN { n = split(ENVIRON["SNAP_ROOTS"], roots, "\n"); anc = ENVIRON["SNAP_ANC"] }
  /^\/proc\/[0-9]+\/fd\/?:$/ { split($0, a, "/"); pid = a[3]; next }
  / -> / {
    i = index($0, " -> "); tgt = substr($0, i + 4); k = split(substr($0, 1, i - 1), f, " ")
    if (f[k] ~ /^\/proc\/[0-9]+\/cwd$/) { split(f[k], a, "/"); p = a[3]; why = "cwd" }
    else if (substr(f[1], 3, 1) == "w") { p = pid; why = "write" }
    else next
    if (index(anc, " " p " ")) next
    for (j = 1; j <= n; j++) {
      r = roots[j]
      if (r != "" && (tgt == r || index(tgt, r "/") == 1)) { print p, why; break }
    }
  }' | sort -u | while read -r p why; do
  # Working there counts only for what sandlot started (its run mark): a container's own
  # keep-alive or an agent also sits in the work tree, and writes nothing.
  if [ "$why" = cwd ]; then
    tr '\000' '\n' < "/proc/$p/environ" 2>/dev/null | grep -q '^SANDLOT_RUN=' || continue
  fi
  cmd=$(tr '\000' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-120)
  [ -n "$cmd" ] && printf '%s %s %s\n' "$p" "$why" "$cmd"
done | head -n 20
exit 0
"""
