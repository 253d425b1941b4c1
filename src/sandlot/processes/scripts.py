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
* `exit`     -- the command's exit status (128+N after signal N), written once it ended
* `eof`      -- the output is complete (every writer of the pipe has closed it)

Only the supervisor touches process ids, so the scripts work where another command cannot see
the process (a PID namespace per command under bubblewrap) and never signal a recycled pid.
"""

from __future__ import annotations

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
group() { kill -s "$1" -- "-$pid" 2>/dev/null || kill -s "$1" "-$pid" 2>/dev/null ||
  kill -s "$1" "$pid" 2>/dev/null; }
( n=0 last=-1 quiet=0
  while [ ! -e "$d/exit" ]; do
    for f in "$d"/signal.*; do
      [ -e "$f" ] || continue
      s=$(cat "$f"); rm -f "$f"
      group "$s"
    done
    if [ $((n % 4)) -eq 0 ]; then
      date +%s > "$d/beat.new" && mv -f "$d/beat.new" "$d/beat"
      t=$((n / 4))
      if [ "$limit" -gt 0 ] && [ "$t" -ge "$limit" ] && [ ! -e "$d/ended_by" ]; then
        echo timeout > "$d/ended_by"; group KILL
      fi
      if [ "$idle" -gt 0 ] && [ ! -e "$d/ended_by" ]; then
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
# Its last output first: a reader that sees the exit status has every byte the command wrote
# (unless something it started still holds the pipe open; that is waited for 2 s at most).
n=0
while [ ! -e "$d/eof" ] && [ "$n" -lt 40 ]; do sleep 0.05 2>/dev/null || sleep 1; n=$((n + 1)); done
echo "$code" > "$d/exit.new" && mv -f "$d/exit.new" "$d/exit"
"""

#: One process's state and output from byte `since`, as `key=value` lines, `--`, then base64.
#: $1 dir  $2 since  $3 max bytes
READ = r"""
d=$1 since=$2 max=$3
[ -d "$d" ] && [ -e "$d/started" ] || { echo missing; exit 0; }
first=-1 top=-1 at=-1
for f in "$d"/out.*; do
  [ -e "$f" ] || continue
  k=${f##*.}
  if [ "$first" -lt 0 ] || [ "$k" -lt "$first" ]; then first=$k; fi
  [ "$k" -gt "$top" ] && top=$k
  [ "$k" -le "$since" ] && [ "$k" -gt "$at" ] && at=$k
done
s=$(wc -c < "$d/out.$top" 2>/dev/null)
total=$(( top < 0 ? 0 : top + ${s:-0} ))
start=$since
if [ "$first" -ge 0 ] && [ "$since" -lt "$first" ]; then at=$first start=$first; fi
printf 'now=%s\nbeat=%s\nstarted=%s\nexit=%s\nended_by=%s\neof=%s\nstart=%s\ntotal=%s\n' \
  "$(date +%s)" "$(cat "$d/beat" 2>/dev/null)" "$(cat "$d/started")" \
  "$(cat "$d/exit" 2>/dev/null)" "$(cat "$d/ended_by" 2>/dev/null)" \
  "$([ -e "$d/eof" ] && echo 1)" "$start" "$total"
printf 'cwd=%s\ncommand=%s\n--\n' "$(cat "$d/cwd.b64")" "$(cat "$d/command.b64")"
[ "$max" -gt 0 ] && [ "$at" -ge 0 ] && [ "$start" -lt "$total" ] || exit 0
{ tail -c "+$((start - at + 1))" "$d/out.$at" 2>/dev/null
  for k in $(for f in "$d"/out.*; do [ -e "$f" ] && echo "${f##*.}"; done | sort -n); do
    [ "$k" -gt "$at" ] && cat "$d/out.$k" 2>/dev/null
  done
} | head -c "$max" | base64
"""

#: Every process under a root: `now=`, then per process `id=` and READ's header lines, each
#: record ended by `--`.
#: $1 root
LIST = r"""
root=$1
[ -d "$root" ] || exit 0
printf 'now=%s\n--\n' "$(date +%s)"
for d in "$root"/*; do
  [ -e "$d/started" ] || continue
  top=-1
  for f in "$d"/out.*; do [ -e "$f" ] || continue; k=${f##*.}; [ "$k" -gt "$top" ] && top=$k; done
  s=$(wc -c < "$d/out.$top" 2>/dev/null)
  total=$(( top < 0 ? 0 : top + ${s:-0} ))
  printf 'id=%s\nbeat=%s\nstarted=%s\nexit=%s\nended_by=%s\ntotal=%s\ncwd=%s\ncommand=%s\n--\n' \
    "${d##*/}" "$(cat "$d/beat" 2>/dev/null)" "$(cat "$d/started")" \
    "$(cat "$d/exit" 2>/dev/null)" "$(cat "$d/ended_by" 2>/dev/null)" "$total" \
    "$(cat "$d/cwd.b64")" "$(cat "$d/command.b64")"
done
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
SIGNAL = r"""
d=$1
[ -e "$d/started" ] || { echo missing; exit 0; }
[ -e "$d/exit" ] && { echo exited; exit 0; }
b=$(cat "$d/beat" 2>/dev/null)
[ $(( $(date +%s) - ${b:-0} )) -gt "$3" ] && { echo lost; exit 0; }
f="$d/signal.$(date +%s).$$"
printf '%s\n' "$2" > "$f.new" && mv -f "$f.new" "$f" && echo sent
"""

#: Wait in the sandbox for up to $2 seconds (in quarter seconds) for the exit; prints the state.
#: $1 dir  $2 seconds  $3 seconds without a beat after which the supervisor counts as lost
WAIT = r"""
d=$1 ticks=$(($2 * 4)) lost=$3 n=0
[ -e "$d/started" ] || { echo missing; exit 0; }
while [ ! -e "$d/exit" ]; do
  if [ $((n % 4)) -eq 0 ]; then
    b=$(cat "$d/beat" 2>/dev/null || echo 0)
    [ $(( $(date +%s) - ${b:-0} )) -gt "$lost" ] && { echo lost; exit 0; }
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
