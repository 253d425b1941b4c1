"""The one shell script that runs a file's checks in the sandbox, and the reading of its output.

Every check of an edit runs in ONE exec (one round trip, whatever the backend), side by side,
each in a background subshell of its own: its PATH prefix, then its `when` (does it apply?),
then `command -v` (is it installed?), then the tool, which replaces the subshell, with stdout
and stderr to two files. The script waits for each in turn and writes its marker files. Once
all have ended, one `cat` prints every section in order (and an `rm` in the background removes
the files, off the edit's path). The exec's
timeout is the budget; when it ends the script, the caller collects the sections of the
checks that finished (`collect`, one more exec) and the others are over budget. The markers
carry a random token, so a tool printing a marker-like line cannot forge a section.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._shell import quote
from ..verify.filecheck import CheckRun, FileCheck

_MARK = "\x1esandlot-check:"


#: Where the scratch files go: /dev/shm (memory) when the sandbox has it writable, else /tmp.
#: Creating a file on a disk-backed /tmp cost 0.6 ms here (10 per Go edit: 7 ms against
#: 0.7 ms on /dev/shm), more than the edit itself; a container's /tmp is its overlay on disk.
_BASE = "b=/tmp; [ -d /dev/shm ] && [ -w /dev/shm ] && b=/dev/shm"


def scratch_dir(token: str) -> str:
    """The shell line that sets `$d`, the prefix of the files the script keeps the checks'
    output in while they run (removed at its end, or by `collect` when the budget ended the
    script first)."""
    if not re.fullmatch(r"[0-9a-f]{16,64}", token):
        raise ValueError("token must be 16 to 64 lowercase hex digits")
    return f'{_BASE}; d="$b/sandlot-feedback-{token}"'


_PARTS = ("head", "out", "mid", "err", "end")


def _files(count: int) -> str:
    return " ".join(f'"$d".{i}.{part}' for i in range(count) for part in _PARTS)


def collect(count: int, token: str) -> str:
    """The shell line that prints the sections of `count` checks, in order, from their files,
    then removes them. One `cat` for all: the section markers are files the checks wrote with
    the shell's own printf, so a check costs no process beyond its tool (on a loaded machine
    each `cat` or `mkdir` is milliseconds)."""
    files = _files(count)
    return f"{scratch_dir(token)}; cat -- {files} 2>/dev/null; rm -f -- {files}"


def _print_then_remove(count: int) -> str:
    """`collect` for the script's own end: the `rm` runs in the background with its streams
    closed, so the exec returns once `cat` has printed (the `rm` was 3-6 ms of a Python
    file's 20 ms of checks on a loaded machine; bench/feedback_bench.py)."""
    files = _files(count)
    return f"cat -- {files} 2>/dev/null; rm -f -- {files} </dev/null >/dev/null 2>&1 &"


def build(checks: Sequence[FileCheck], token: str) -> str:
    """The script for `checks`; `token` must be the caller's fresh random hex."""
    lines = [f"{scratch_dir(token)}; umask 077"]
    # Each check's section marker and scratch-file prefix.
    places = [(quote(f"{_MARK}{token}:{index}:"), f'"$d".{index}') for index in range(len(checks))]
    # The last check starts first: detectors list the formatter first and the heavier linter
    # or type checker after it, and on two cores go vet started a subshell's fork later behind
    # gofmt cost the edit a millisecond (bench/feedback_bench.py).
    for index, check in reversed(list(enumerate(checks))):
        mark, at = places[index]
        body = []
        if check.path_prefix:
            joined = ":".join(quote(p) for p in check.path_prefix)
            body.append(f'PATH={joined}:"$PATH"; export PATH')
        body.append(f"cd -- {quote(check.cwd)} || "
                    f"{{ printf '%sskip\\n' {mark} >{at}.head; exit 0; }}")
        if check.when:
            # In the check's own shell, not a subshell of its own: one process start less per
            # check (FileCheck.when: a condition that neither exits nor changes directory).
            body.append(f"{{ {check.when}\n}} </dev/null >/dev/null 2>&1 || "
                        f"{{ printf '%sskip\\n' {mark} >{at}.head; exit 0; }}")
        body.append(f"command -v {quote(check.binary)} >/dev/null 2>&1 || "
                    f"{{ printf '%smissing\\n' {mark} >{at}.head; exit 0; }}")
        words = " ".join(quote(a) for a in check.argv)
        # The tool replaces the check's subshell (no process start beyond the tool's own);
        # the script reads its exit status from `wait`.
        body.append(f"exec {words} </dev/null >{at}.out 2>{at}.err")
        # The checks run side by side (one tool's start-up beside another's: prettier and
        # eslint are each a Node start).
        lines.append(f"( {'; '.join(body)} ) & p{index}=$!")
    for index, (mark, at) in enumerate(places):
        # Its markers once it ended (a skipped or missing check wrote its head already), the
        # end one last of all: a section is complete only once its end marker exists, so one
        # cut short by the budget reads as over budget.
        lines.append(f'wait "$p{index}"; rc=$?; [ -e {at}.head ] || '
                     f"printf '%src:%s\\n' {mark} \"$rc\" >{at}.head; "
                     f"printf '\\n%sstderr\\n' {mark} >{at}.mid; "
                     f"printf '\\n%send\\n' {mark} >{at}.end")
    lines.append(_print_then_remove(len(checks)))
    return "\n".join(lines)


def split(checks: Sequence[FileCheck], token: str, stdout: str) -> list[CheckRun]:
    """Each check's run from the script's stdout; a check without a complete section did not
    finish (the budget ended the script): `over_budget`."""
    runs = []
    for index, check in enumerate(checks):
        mark = f"{_MARK}{token}:{index}:"
        start = stdout.find(mark)
        if start < 0:
            runs.append(CheckRun(check=check, status="over_budget"))
            continue
        rest = stdout[start + len(mark):]
        head, _, rest = rest.partition("\n")
        if head in ("skip", "missing"):
            runs.append(CheckRun(check=check, status="skipped" if head == "skip" else "missing"))
            continue
        out, sep, rest = rest.partition(f"\n{mark}stderr\n")
        err, end, _ = rest.partition(f"\n{mark}end\n")
        if not (head.startswith("rc:") and head[3:].isdigit() and sep and end):
            runs.append(CheckRun(check=check, status="over_budget"))
            continue
        runs.append(CheckRun(check=check, status="ran", exit_code=int(head[3:]),
                             stdout=out, stderr=err))
    return runs
