"""Which containment a toolbox gets in its sandbox, and how the race-free helper is run.

`descriptor`: the sandbox has python3 (3.8 or newer), so read, write, edit and grep on a file
run safe_helper.py there: check and use are one step through directory descriptors, and a
racing process cannot redirect them (adr/0007). `path`: it has not, so the sh scripts run:
every path is resolved and checked first, then used by name, which a process racing inside
the same sandbox can redirect between the two. The mode is decided once per toolbox, logged
when it is `path`, and shown as `Toolbox.containment`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from ..sandbox import Sandbox

log = logging.getLogger("sandlot.tools")

Containment = Literal["descriptor", "path"]

#: What LAUNCH prints (stderr, first line) when it falls back to the sh script.
PATH_MODE_NOTE = "sandlot: containment=path (no python3 in the sandbox)"

#: The helper's source, sent as one argument (it is self-contained, standard library only).
HELPER_SOURCE = (Path(__file__).with_name("safe_helper.py")).read_text()

#: Runs the helper where python3 is, else the sh script itself (saying so on stderr): `$1` the
#: helper's source, `$2` the sh script, `$3` the operation, then the script's own arguments.
#: One round trip either way. `-I -S`: isolated (PYTHON* variables ignored, nothing imported
#: from the working directory, so a `json.py` an agent leaves in the workspace is not run) and
#: no site module (the helper is standard library only; a faster start on every call).
LAUNCH = (
    'src=$1; script=$2; op=$3; shift 3; '
    'if command -v python3 >/dev/null 2>&1; then '
    'exec python3 -I -S -c "$src" "$script" "$op" "$@"; fi; '
    f'echo "{PATH_MODE_NOTE}" >&2; exec sh -c "$script" "sandlot-$op" "$@"'
)

_PROBE = "python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 8) else 1)'"


async def detect(sandbox: Sandbox, env: Mapping[str, str]) -> Containment:
    """The mode for tools run with `env` (their PATH decides whether python3 is found)."""
    found = await sandbox.exec(["sh", "-c", f"{_PROBE} 2>/dev/null"], env=env)
    if found.exit_code == 0:
        return "descriptor"
    warn(sandbox)
    return "path"


def warn(sandbox: Sandbox) -> None:
    log.warning(
        "sandbox %s has no python3 >= 3.8: the toolbox checks each path and then uses it by "
        "name, which a process racing in the same sandbox can redirect (containment='path'; "
        "install python3 in the image for containment='descriptor')", sandbox.name,
    )
