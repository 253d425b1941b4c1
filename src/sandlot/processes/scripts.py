"""The POSIX sh scripts that run and read durable processes inside a sandbox.

They need only what busybox has (sh, head, tail, cat, wc, date, mkfifo, setsid, base64, env),
so they work in a minimal container as in a Coder workspace. Layout of one process's
directory (`<root>/<id>/`):

* `command.b64`, `cwd.b64`, `started`  -- what was started, where, when (epoch seconds)
* `pipe`     -- the FIFO the command's stdout and stderr both write to
* `out.<start>` -- an output segment, named by the byte offset of its first byte; one holds
                up to `seg` bytes, and only the newest `keep` are kept, so the files stay
                bounded however much the command prints
* `beat`     -- epoch seconds, rewritten every second while the supervisor lives
* `detached` -- the supervisor runs in its own session under the process's own run mark and
                has started the command (`start()` returns only once this exists)
* `signal.<n>` -- a signal name someone asked for; the supervisor delivers it and removes it
* `ended_by` -- `timeout` or `idle_timeout` when the supervisor ended the command itself
* `reaped`   -- the command's exit status was collected: its pid is no longer signalled
* `exit`     -- the command's exit status (128+N after signal N), written once it ended
* `eof`      -- the output is complete (every writer of the pipe has closed it)

Only the supervisor touches process ids, so the scripts work where another command cannot see
the process (a PID namespace per command under bubblewrap) and never signal a recycled pid.
"""

from __future__ import annotations

#: How long one script reading the processes' files may run (a wait: its own span longer).
SCRIPT_SECONDS = 60.0

#: Makes a process's directory before its supervisor starts (a failure here loses nothing).
#: $1 dir  $2 command, base64  $3 cwd, base64  $4 a .gitignore to create if missing  $5 cwd
PREPARE = r"""
d=$1
[ -d "$5" ] || { echo "no such directory: $5" >&2; exit 4; }
[ -e "$4" ] || { mkdir -p "${4%/*}" && printf '*\n' > "$4"; } || exit 3
mkdir -p "$d" && printf '%s\n' "$2" > "$d/command.b64" && printf '%s\n' "$3" > "$d/cwd.b64" &&
date +%s > "$d/started" && cp "$d/started" "$d/beat" && mkfifo "$d/pipe" || exit 3
"""

#: The supervisor: writer of the segments, the command, and a poller that beats, delivers
#: signal requests and enforces the time limits. Run detached, in the process's working directory.
#: $1 dir  $2 segment bytes  $3 segments kept  $4 timeout s (0: none)  $5 idle timeout s (0: none)
#: $6 the command line
SUPERVISOR = r"""
d=$1 seg=$2 keep=$3 limit=$4 idle=$5
# Each segment is written as its bytes arrive: head's stdio buffer would hold them back, so
# GNU head runs under stdbuf -o0; busybox (no stdbuf) counts exact bytes with dd.
if stdbuf -o0 true 2>/dev/null; then chunk() { stdbuf -o0 head -c "$seg"; }
else chunk() { dd bs=65536 count="$seg" iflag=count_bytes 2>/dev/null; }
fi
( at=0
  while :; do
    chunk > "$d/out.$at"
    n=$(wc -c < "$d/out.$at")
    [ "${n:-0}" -eq 0 ] && { rm -f "$d/out.$at"; break; }
    at=$((at + n))
    while :; do
      count=0 low=-1
      for f in "$d"/out.*; do
        [ -e "$f" ] || continue
        count=$((count + 1)); k=${f##*.}
        if [ "$low" -lt 0 ] || [ "$k" -lt "$low" ]; then low=$k; fi
      done
      [ "$count" -ge "$keep" ] || break
      rm -f "$d/out.$low"
    done
  done
  : > "$d/eof" ) < "$d/pipe" &
setsid sh -c "$6" < /dev/null > "$d/pipe" 2>&1 &
pid=$!
# From here nothing of this process holds the mark of the command that started it, so a close
# that sweeps that command's sandbox cannot end it: start() waits for this file.
: > "$d/detached"
# The whole group: dash and bash take `kill -s SIG -- -PID`, busybox only `kill -s SIG -PID`.
# Never once the command was reaped (`reaped`, written right after `wait`): its number may be
# another process's by then, and a signal meant for the command would reach a stranger (a
# timeout or a signal request in the 2 s the last output is waited for once did).
group() { { [ -e "$d/reaped" ] || [ ! -d "$d" ]; } && return 0
  kill -s "$1" -- "-$pid" 2>/dev/null || kill -s "$1" "-$pid" 2>/dev/null ||
  kill -s "$1" "$pid" 2>/dev/null; }
( n=0 last=-1 quiet=0
  # Ends with the exit, or with the directory (removed by `remove()`): a poller left looping
  # would find no `exit` and no `reaped`, and signal a number that is long someone else's.
  while [ -d "$d" ] && [ ! -e "$d/exit" ]; do
    for f in "$d"/signal.*; do
      [ -e "$f" ] || continue
      s=$(cat "$f"); rm -f "$f"
      group "$s"
    done
    if [ $((n % 4)) -eq 0 ]; then
      date +%s > "$d/beat.new" && mv -f "$d/beat.new" "$d/beat"
      t=$((n / 4))
      # Limits hold only while the command runs (not once it is reaped: it ended first).
      if [ "$limit" -gt 0 ] && [ "$t" -ge "$limit" ] && [ ! -e "$d/ended_by" ] &&
         [ ! -e "$d/reaped" ]; then
        echo timeout > "$d/ended_by"; group KILL
      fi
      if [ "$idle" -gt 0 ] && [ ! -e "$d/ended_by" ] && [ ! -e "$d/reaped" ]; then
        top=0
        for f in "$d"/out.*; do [ -e "$f" ] && [ "${f##*.}" -gt "$top" ] && top=${f##*.}; done
        s=$(wc -c < "$d/out.$top" 2>/dev/null)
        size=$(( top + ${s:-0} ))
        if [ "$size" -ne "$last" ]; then last=$size quiet=0; else quiet=$((quiet + 1)); fi
        if [ "$quiet" -ge "$idle" ]; then
          echo idle_timeout > "$d/ended_by"; group KILL
        fi
      fi
    fi
    n=$((n + 1))
    sleep 0.25 2>/dev/null || sleep 1
  done ) &
wait "$pid"
code=$?
: > "$d/reaped"
# Its last output first: a reader that sees the exit status has every byte the command wrote
# (unless something it started still holds the pipe open; that is waited for 2 s at most).
n=0
while [ ! -e "$d/eof" ] && [ "$n" -lt 40 ]; do sleep 0.05 2>/dev/null || sleep 1; n=$((n + 1)); done
echo "$code" > "$d/exit.new" && mv -f "$d/exit.new" "$d/exit"
"""

#: What every reader shares. The sandbox controls these files, so a reader opens only regular
#: files (a FIFO or device there would block it for good), reads a record file's first line
#: with the shell's own `read` (no process per field, and no newline can forge another field),
#: and says `?` for a file that is there but not a regular file or longer than its bound, so the
#: record, and only that one, is unreadable. `segment` admits only regular `out.<number>` files
#: (and sets k to the number).
_READER = r"""
field() {
  v=
  if [ -f "$1" ]; then read -r v < "$1" || :; [ "${#v}" -le "$2" ] || v='?'
  elif [ -e "$1" ] || [ -L "$1" ]; then v='?'
  fi
}
present() { [ -e "$1" ] || [ -L "$1" ]; }
segment() {
  k=${1##*.}
  # No leading zero: $((08)) is bad octal, an error that would end the whole script.
  case $k in ''|*[!0-9]*|0?*|??????????????????*) return 1 ;; esac
  [ -f "$1" ]
}
"""

#: One process's state and output from byte `since`, as `key=value` lines, `--`, then base64.
#: $1 dir  $2 since  $3 max bytes
READ = _READER + r"""
d=$1 since=$2 max=$3
[ -d "$d" ] && present "$d/started" || { echo missing; exit 0; }
first=-1 top=-1 at=-1
for f in "$d"/out.*; do
  segment "$f" || continue
  if [ "$first" -lt 0 ] || [ "$k" -lt "$first" ]; then first=$k; fi
  [ "$k" -gt "$top" ] && top=$k
  [ "$k" -le "$since" ] && [ "$k" -gt "$at" ] && at=$k
done
s=; [ "$top" -ge 0 ] && s=$(wc -c < "$d/out.$top" 2>/dev/null)
total=$(( top < 0 ? 0 : top + ${s:-0} ))
start=$since
if [ "$first" -ge 0 ] && [ "$since" -lt "$first" ]; then at=$first start=$first; fi
field "$d/beat" 32; beat=$v; field "$d/started" 32; started=$v; field "$d/exit" 32; code=$v
field "$d/ended_by" 32; ended=$v; field "$d/cwd.b64" 262144; cwd=$v
field "$d/command.b64" 262144; command=$v
printf 'now=%s\nbeat=%s\nstarted=%s\nexit=%s\nended_by=%s\neof=%s\nstart=%s\ntotal=%s\n' \
  "$(date +%s)" "$beat" "$started" "$code" "$ended" "$(present "$d/eof" && echo 1)" "$start" \
  "$total"
printf 'cwd=%s\ncommand=%s\n--\n' "$cwd" "$command"
[ "$max" -gt 0 ] && [ "$at" -ge 0 ] && [ "$start" -lt "$total" ] || exit 0
{ [ -f "$d/out.$at" ] && tail -c "+$((start - at + 1))" "$d/out.$at" 2>/dev/null
  for k in $(for f in "$d"/out.*; do segment "$f" && echo "$k"; done | sort -n); do
    [ "$k" -gt "$at" ] && [ -f "$d/out.$k" ] && cat "$d/out.$k" 2>/dev/null
  done
} | head -c "$max" | base64
"""

#: Every process under a root: `now=`, then per process `id=` and READ's header lines, each
#: record ended by `--`. Only directories named like an id (12 hex digits) that hold `started`
#: count, and at most $2 records or about $3 bytes of them are printed: a `more=` record then
#: says how many were left out. One pass, no process per directory (one per listed record
#: with output, for its size), so a sandbox full of other directories costs little.
#: $1 root  $2 most records  $3 byte budget
LIST = _READER + r"""
root=$1 cap=$2 budget=$3
[ -d "$root" ] || exit 0
printf 'now=%s\n--\n' "$(date +%s)"
n=0 more=0 size=0
x='[0-9a-f]'
for d in "$root"/*; do
  case ${d##*/} in $x$x$x$x$x$x$x$x$x$x$x$x) ;; *) continue ;; esac
  present "$d/started" || continue
  if [ "$n" -ge "$cap" ] || [ "$size" -ge "$budget" ]; then more=$((more + 1)); continue; fi
  n=$((n + 1)) top=-1
  for f in "$d"/out.*; do segment "$f" && [ "$k" -gt "$top" ] && top=$k; done
  s=; [ "$top" -ge 0 ] && s=$(wc -c < "$d/out.$top" 2>/dev/null)
  total=$(( top < 0 ? 0 : top + ${s:-0} ))
  field "$d/beat" 32; beat=$v; field "$d/started" 32; started=$v; field "$d/exit" 32; code=$v
  field "$d/ended_by" 32; ended=$v; field "$d/cwd.b64" 262144; cwd=$v
  field "$d/command.b64" 262144; command=$v
  size=$((size + ${#cwd} + ${#command} + 160))
  printf 'id=%s\nbeat=%s\nstarted=%s\nexit=%s\nended_by=%s\ntotal=%s\ncwd=%s\ncommand=%s\n--\n' \
    "${d##*/}" "$beat" "$started" "$code" "$ended" "$total" "$cwd" "$command"
done
[ "$more" -eq 0 ] || printf 'more=%s\n--\n' "$more"
"""

#: Wait up to $2 seconds (in twentieths) for the supervisor to say it detached: prints `up`,
#: or `late`. $1 dir  $2 seconds
DETACHED = r"""
d=$1 ticks=$(($2 * 20)) n=0
until [ -e "$d/detached" ]; do
  [ "$n" -ge "$ticks" ] && { echo late; exit 0; }
  n=$((n + 1))
  sleep 0.05 2>/dev/null || { sleep 1; n=$((n + 19)); }
done
echo up
"""

#: Ask the supervisor to deliver a signal. $1 dir  $2 signal name  $3 seconds until lost
SIGNAL = _READER + r"""
d=$1
present "$d/started" || { echo missing; exit 0; }
present "$d/exit" && { echo exited; exit 0; }
field "$d/beat" 32
case $v in ''|*[!0-9]*|0?*) v=0 ;; esac
[ $(( $(date +%s) - v )) -gt "$3" ] && { echo lost; exit 0; }
f="$d/signal.$(date +%s).$$"
printf '%s\n' "$2" > "$f.new" && mv -f "$f.new" "$f" && echo sent
"""

#: Wait in the sandbox for up to $2 seconds (in quarter seconds) for the exit; prints the state.
#: $1 dir  $2 seconds  $3 seconds without a beat after which the supervisor counts as lost
WAIT = _READER + r"""
d=$1 ticks=$(($2 * 4)) lost=$3 n=0
present "$d/started" || { echo missing; exit 0; }
while ! present "$d/exit"; do
  if [ $((n % 4)) -eq 0 ]; then
    field "$d/beat" 32
    case $v in ''|*[!0-9]*|0?*) v=0 ;; esac
    [ $(( $(date +%s) - v )) -gt "$lost" ] && { echo lost; exit 0; }
  fi
  [ "$n" -ge "$ticks" ] && { echo running; exit 0; }
  n=$((n + 1))
  sleep 0.25 2>/dev/null || sleep 1
done
echo exited
"""

#: Remove a process's files. $1 dir
REMOVE = r"""
[ -e "$1/started" ] || { echo missing; exit 0; }
rm -rf -- "$1" && echo removed
"""


#: The patterns a watched process was started with (adr/0051). $1 dir  $2 the patterns
WATCH_WRITE = r"""
[ -d "$1" ] || exit 3
printf '%s' "$2" > "$1/watch.tmp" && mv -f "$1/watch.tmp" "$1/watch"
"""

#: Reads them back (at most 200 kB): `missing` when there is no such process.
WATCH_READ = r"""
[ -d "$1" ] || { echo missing; exit 0; }
if [ -f "$1/watch" ] && [ ! -L "$1/watch" ]; then head -c 200000 "$1/watch"; fi
exit 0
"""
