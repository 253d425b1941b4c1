"""The one shell script that runs a file's checks in the sandbox, and the reading of its output.

Every check of an edit runs in ONE exec (one round trip, whatever the backend), side by side,
each in a background subshell of its own: its PATH prefix, then its `when` (does it apply?),
then `command -v` (is it installed?), then the tool with stdout and stderr to two files, which
become its section (after a marker line) in a third. The script prints the sections in order,
each once its check has ended. The exec's timeout is the budget; when it ends the script, the
checks whose section was printed are complete and the others are the ones over budget. The
markers carry a random token, so a tool printing a marker-like line cannot forge a section.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .._shell import quote
from ..verify.filecheck import CheckRun, FileCheck

_MARK = "\x1esandlot-check:"


def scratch_dir(token: str) -> str:
    """Where the script keeps the checks' output while they run (removed at its end, or by the
    caller when the budget ended the script first)."""
    return f"/tmp/sandlot-feedback-{token}"


def build(checks: Sequence[FileCheck], token: str) -> str:
    """The script for `checks`; `token` must be the caller's fresh random hex."""
    if not re.fullmatch(r"[0-9a-f]{16,64}", token):
        raise ValueError("token must be 16 to 64 lowercase hex digits")
    tmp = '"$d"'
    lines = [f"d={quote(scratch_dir(token))}; umask 077; mkdir -p -- {tmp} || exit 3"]
    for index, check in enumerate(checks):
        mark = quote(f"{_MARK}{token}:{index}:")
        section = f"{tmp}/{index}.section"
        body = []
        if check.path_prefix:
            joined = ":".join(quote(p) for p in check.path_prefix)
            body.append(f'PATH={joined}:"$PATH"; export PATH')
        body.append(f"cd -- {quote(check.cwd)} || "
                    f"{{ printf '%sskip\\n' {mark} >{section}; exit 0; }}")
        if check.when:
            body.append(f"( {check.when} ) </dev/null >/dev/null 2>&1 || "
                        f"{{ printf '%sskip\\n' {mark} >{section}; exit 0; }}")
        body.append(f"command -v {quote(check.binary)} >/dev/null 2>&1 || "
                    f"{{ printf '%smissing\\n' {mark} >{section}; exit 0; }}")
        out, err = f"{tmp}/{index}.out", f"{tmp}/{index}.err"
        words = " ".join(quote(a) for a in check.argv)
        body.append(f"{words} </dev/null >{out} 2>{err}")
        body.append(f"rc=$?; {{ printf '%src:%s\\n' {mark} \"$rc\"; cat {out}; "
                    f"printf '\\n%sstderr\\n' {mark}; cat {err}; "
                    f"printf '\\n%send\\n' {mark}; }} >{section}")
        # The checks run side by side (one tool's start-up beside another's: prettier and
        # eslint are each a Node start); their sections are printed in order as they end.
        lines.append(f"( {'; '.join(body)} ) & p{index}=$!")
    for index in range(len(checks)):
        lines.append(f'wait "$p{index}"; cat -- {tmp}/{index}.section 2>/dev/null')
    lines.append(f"rm -rf -- {tmp}")
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
