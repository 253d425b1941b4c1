"""The session helper as the sandbox receives it: its modules in one program (the bundle),
the bundle's hash, and the small bootstrap that runs it (adr/0042).

The bootstrap (`python3 -I -S -c BOOT sandlot-session HASH SIZE`) looks for the bundle in the
sandbox's cache (`$XDG_CACHE_HOME/sandlot/helper`, else `~/.cache/sandlot/helper`, then
`$TMPDIR/sandlot-helper-<uid>`), reads it into memory, and runs it only if its SHA-256 is HASH:
the bytes checked are the bytes run, so a sandbox process that rewrote the file gains nothing.
Otherwise it asks the host for the bundle (a NEED frame), checks what comes (one SOURCE frame)
against the same hash, caches it (temp file, rename) and runs it.

To add operations: a module under sandlot/_session/helper/ registering them with @op (see
helper/core.py), and its name in `HELPER_MODULES`. The bundle and hash follow.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from pathlib import Path

#: The modules of the helper program, in load order (dependencies first). One line per module.
HELPER_MODULES: tuple[str, ...] = (
    "sandlot._process_group",
    "sandlot.tools.safe_helper",
    "sandlot._session.helper.core",
    "sandlot._session.helper.search",
    "sandlot._session.helper.files",
    "sandlot._session.helper.flow",
    "sandlot._session.helper.command",
    "sandlot._session.helper.ports",
    "sandlot._session.helper.handover",
)

_LOADER = '''
import sys, types


def _load(name, source):
    parts = name.split(".")
    for i in range(1, len(parts)):
        package = ".".join(parts[:i])
        if package not in sys.modules:
            module = types.ModuleType(package)
            module.__path__ = []
            sys.modules[package] = module
            if i > 1:
                setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], module)
    module = types.ModuleType(name)
    module.__file__ = "<sandlot-session:" + name + ">"
    sys.modules[name] = module
    setattr(sys.modules[".".join(parts[:-1])], parts[-1], module)
    exec(compile(source, module.__file__, "exec"), module.__dict__)


for _name, _source in MODULES:
    _load(_name, _source)
sys.modules["sandlot._session.helper.core"].main()
'''

#: Run by `python3 -I -S -c`; argv: sandlot-session HASH SIZE. Exit 126: python3 too old;
#: 125: the bundle the host sent does not match HASH.
BOOT = r'''
import hashlib, os, stat, struct, sys
if sys.version_info < (3, 8):
    sys.stderr.write("sandlot: python3 is older than 3.8\n")
    sys.exit(126)
h, n = sys.argv[2], int(sys.argv[3])
name = "session-" + h + ".py"
home = os.environ.get("HOME") or "/nonexistent"
cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
dirs = [os.path.join(cache, "sandlot", "helper"),
        os.path.join(os.environ.get("TMPDIR") or "/tmp", "sandlot-helper-%d" % os.getuid())]
def cached(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read(n + 1)
    finally:
        os.close(fd)
b = None
for d in dirs:
    c = cached(os.path.join(d, name))
    if c is not None and hashlib.sha256(c).hexdigest() == h:
        b = c
        break
if b is None:
    o, i = sys.stdout.buffer, sys.stdin.buffer
    o.write(struct.pack(">IIc", 0, 0, b"N"))
    o.flush()
    head = i.read(9)
    if len(head) < 9:
        sys.exit(0)
    k, _, kind = struct.unpack(">IIc", head)
    b = i.read(k) if kind == b"S" and k == n else b""
    if hashlib.sha256(b).hexdigest() != h:
        sys.stderr.write("sandlot: the helper sent does not match its hash\n")
        sys.exit(125)
    for d in dirs:
        try:
            os.makedirs(d, 0o700, exist_ok=True)
            tmp = os.path.join(d, "%s.%d.tmp" % (name, os.getpid()))
            with open(tmp, "wb") as f:
                f.write(b)
            os.replace(tmp, os.path.join(d, name))
            break
        except OSError:
            pass
exec(compile(b, "<sandlot-session>", "exec"), {"__name__": "sandlot_session"})
'''

#: The sh line that starts it: `$1` BOOT, `$2` the hash, `$3` the size. Exit 127: no python3.
START = (
    'command -v python3 >/dev/null 2>&1 || '
    '{ echo "sandlot: no python3 in the sandbox" >&2; exit 127; }; '
    # The environment before python3 runs (a wrapper such as a pyenv shim, and Python's own
    # locale coercion, change it): what commands the helper starts get (adr/0043).
    'SANDLOT_SESSION_ENV=$(export -p); export SANDLOT_SESSION_ENV; '
    'exec python3 -I -S -c "$1" sandlot-session "$2" "$3"'
)


def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None, module
    return Path(spec.origin).read_text()


@cache
def bundle() -> bytes:
    """The helper program: every module's source, then the loader that runs them."""
    modules = [(name, _source(name)) for name in HELPER_MODULES]
    return f"MODULES = {modules!r}\n{_LOADER}".encode()


@cache
def digest() -> str:
    return hashlib.sha256(bundle()).hexdigest()
