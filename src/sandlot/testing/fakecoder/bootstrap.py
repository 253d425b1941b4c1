"""How processes of the fake (the `coder` launcher, agent daemons) load this package fast.

Importing ``sandlot.testing.fakecoder`` the normal way would first run ``sandlot/__init__.py``,
which pulls in the whole SDK (pydantic, anyio, asyncssh): far too slow for a CLI that is run
hundreds of times per test session. The launcher instead loads this directory as a top-level
package under a private alias, so only the standard-library modules of the fake are imported.
"""

from __future__ import annotations

import sys
from pathlib import Path

ALIAS = "_sandlot_fakecoder"
PACKAGE_DIR = Path(__file__).resolve().parent


def loader_source(package_dir: Path = PACKAGE_DIR) -> str:
    """Python source that imports the fake under ALIAS from `package_dir` (for -c or a script).

    Byte-code is written next to the sources (the usual __pycache__) even when
    PYTHONDONTWRITEBYTECODE is set: recompiling the fake on every call would cost more than
    everything else the CLI does. A read-only install simply gets no cache.
    """
    return (
        "import importlib.util as _u, sys as _s\n"
        "_s.dont_write_bytecode = False\n"
        f"_spec = _u.spec_from_file_location({ALIAS!r}, {str(package_dir / '__init__.py')!r}, "
        f"submodule_search_locations=[{str(package_dir)!r}])\n"
        "_m = _u.module_from_spec(_spec)\n"
        f"_s.modules[{ALIAS!r}] = _m\n"
        "_spec.loader.exec_module(_m)\n"
    )


def launcher_script(root: Path, python: str | None = None) -> str:
    """The `coder` executable written by FakeCoderDeployment.install().

    Kernels cap the shebang line (127 bytes on older Linux), so a long interpreter path gets a
    `/bin/sh` first line that re-executes the file with Python (the sh/Python polyglot trick:
    for sh the second line is an `exec`, for Python it is a string literal).
    """
    python = python or sys.executable
    header = f"#!{python} -sS\n"
    if len(header) > 120:
        header = "#!/bin/sh\n" + "''''" + f'exec "{python}" -sS "$0" "$@" # ' + "'''\n"
    return (
        header
        + "# Fake `coder` CLI from sandlot.testing (a test double, not the real Coder CLI).\n"
        "import os\n"
        f"os.environ.setdefault('SANDLOT_FAKE_CODER_HOME', {str(root)!r})\n"
        + loader_source()
        + f"from {ALIAS}.cli import main\n"
        "raise SystemExit(main())\n"
    )


def agent_command(root: Path, agent_id: str) -> list[str]:
    """argv that starts (and daemonises) the SSH server of one agent."""
    code = loader_source() + (f"from {ALIAS}.daemon import spawn_main\nspawn_main()\n")
    return [sys.executable, "-c", code, str(root), agent_id]
