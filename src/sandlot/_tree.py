"""Remove any directory tree a sandbox can make on this host.

`shutil.rmtree` recurses in Python: a 1,000-level-deep tree (one `mkdir -p` away for code in a
sandbox) raises RecursionError even with ignore_errors, and a directory the sandbox made
unreadable (`chmod 000`) stops a non-root caller. GNU `rm -rf` walks with fts, iteratively and
relative to directory descriptors, so neither depth nor path length stops it; a `chmod -R u+rwx`
before it reopens what the sandbox closed. Python's own walk is kept as the fallback for a host
without those tools.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path


def remove_tree(path: str | Path) -> bool:
    """Remove `path` and everything under it; True when nothing is left. Never raises."""
    target = os.fspath(path)
    if not os.path.lexists(target):
        return True
    if os.path.isdir(target) and not os.path.islink(target):
        chmod, rm = shutil.which("chmod"), shutil.which("rm")
        if chmod and rm:
            # "--" so a path starting with "-" is never read as an option.
            subprocess.run([chmod, "-R", "u+rwx", "--", target], capture_output=True, check=False)
            subprocess.run([rm, "-rf", "--", target], capture_output=True, check=False)
    if os.path.lexists(target):
        try:
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target, ignore_errors=True)
            else:
                os.unlink(target)
        except (OSError, RecursionError):
            pass
    return not os.path.lexists(target)
