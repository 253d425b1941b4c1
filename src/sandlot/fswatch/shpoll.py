"""The polling watcher for a sandbox without python3 (a busybox container): POSIX sh, find,
stat -c, sort and awk. Each `poll_interval` it lists the tree (inode, mtime, size, name) and
compares with the last listing: new names are `created` (or `moved`, when their inode left an
old name that is gone), changed ones `modified`, vanished ones `deleted`. Seconds of mtime are
all busybox gives: two writes of the same size within one second look like one. A name with a
newline in it is not watched. Output: the same JSON lines as agent.py.

    sh -c SCRIPT sandlot-fswatch ROOT RECURSIVE INTERVAL
"""

SCRIPT = r"""
root=$1 recursive=$2 interval=$3
[ -d "$root" ] || { echo "not a directory: $root" >&2; exit 3; }
tmp=$(mktemp -d) || exit 3
trap 'rm -rf "$tmp"' EXIT INT TERM HUP
if [ "$recursive" = 1 ]; then depth=""; else depth="-maxdepth 1"; fi
snap() {
  # shellcheck disable=SC2086
  find "$root" -mindepth 1 $depth -exec stat -c '%i %Y %s %n' {} + 2>/dev/null | sort -k4 > "$1"
}
snap "$tmp/old"
printf '{"k": "ready", "p": "", "d": "", "s": "poll"}\n'
while :; do
  sleep "$interval"
  snap "$tmp/new"
  awk -v root="$root/" '
    function name(line,   i, n) {
      n = line; for (i = 0; i < 3; i++) sub(/^[^ ]+ /, "", n); return n
    }
    function rel(p) { return substr(p, length(root) + 1) }
    function js(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); gsub(/\t/, "\\t", s); return s }
    function out(k, p, d) {
      printf "{\"k\": \"%s\", \"p\": \"%s\", \"d\": \"%s\", \"s\": \"poll\"}\n", \
        k, js(rel(p)), js(rel(d))
    }
    FILENAME == ARGV[1] { n = name($0); old[n] = $1 " " $2 " " $3; byino[$1] = n; next }
    FILENAME == ARGV[2] { now[name($0)] = 1; next }
    {
      n = name($0); sig = $1 " " $2 " " $3
      if (n in old) { if (old[n] != sig) out("modified", n, root); next }
      o = byino[$1]
      if (o != "" && !(o in now) && !(o in gone)) { out("moved", o, n); gone[o] = 1 }
      else out("created", n, root)
    }
    END { for (n in old) if (!(n in now) && !(n in gone)) out("deleted", n, root) }
  ' "$tmp/old" "$tmp/new" "$tmp/./new"
  mv -f "$tmp/new" "$tmp/old"
done
"""

#: Chooses the watcher: python3 (inotify, else its own polling) where the sandbox has it,
#: else the sh poller. $1 python source $2 sh script $3 root $4 recursive $5 interval $6 poll
LAUNCH = r"""
if command -v python3 >/dev/null 2>&1; then
  exec python3 -I -S -c "$1" "$3" "$4" "$5" "$6"
fi
exec sh -c "$2" sandlot-fswatch "$3" "$4" "$5"
"""
