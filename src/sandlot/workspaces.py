"""Named workspace roots inside one sandbox, and the path containment every file tool uses.

A `WorkspaceSet` maps names to absolute roots in the sandbox. Tools take an optional
`workspace` argument and resolve paths against the chosen root; a path never leaves it.

Containment has two layers:

1. `contain_path` (pure, here): lexical. Relative paths join the root; once a path is inside
   the root, a `..` that steps above it is refused even if later components come back (the
   walk itself left the workspace); the path must end inside the root. The same walk is done
   on a look-alike-folded copy of the path (NFKC plus slash and dot confusables), so
   `\\u2024\\u2024\\uff0fetc` is refused like `../etc`.
2. In the sandbox (sandlot.tools' scripts): the lexically contained path is resolved with the
   sandbox's own `cd -P` / `readlink -f` in the same round trip as the operation, and refused
   when a symlink takes it outside the root's real path.

Roots never nest (one root inside another would let a path in one workspace reach the
other's files), so containment per workspace also means no cross-workspace traversal.
"""

from __future__ import annotations

import contextlib
import functools
import os
import posixpath
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from .errors import (
    HostPathNotFoundError,
    InvalidPathError,
    PathOutsideWorkspaceError,
    WorkspaceError,
)

if TYPE_CHECKING:
    from .sandbox import Sandbox

__all__ = [
    "Workspace",
    "WorkspaceSet",
    "contain_path",
    "fold_lookalikes",
    "mount",
]

# Characters that are not "/" or "." but read as one (NFKC does not map all of them).
_SLASH_LOOKALIKES = "\u2044\u2215\u29f8\u2571\u1735\uff0f"
_DOT_LOOKALIKES = "\u2024\uff0e\ufe52\u3002\uff61\u0701\u0702\u06d4\ua4f8\u2e31"
_FOLD_TABLE = str.maketrans(
    {**dict.fromkeys(_SLASH_LOOKALIKES, "/"), **dict.fromkeys(_DOT_LOOKALIKES, ".")}
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_BAD_NAME = re.compile(r"[,=/\s\x00-\x1f\x7f]")


def fold_lookalikes(path: str) -> str:
    """How a reader (or a unicode-normalising tool) might take `path`: NFKC, then confusables.

    `\\uff0f` (fullwidth solidus) becomes "/", `\\u2024` (one dot leader) ".", `\\u2025` "..".
    """
    return unicodedata.normalize("NFKC", path).translate(_FOLD_TABLE)


def _normalize_root(root: str) -> str:
    # posixpath.normpath keeps a leading "//" (POSIX allows it to mean something else);
    # a sandbox root never does, so collapse it.
    normal = posixpath.normpath(root)
    return "/" + normal.lstrip("/")


def _walk(root_parts: list[str], path: str) -> list[str] | None:
    """The components of `path` resolved lexically against the root; None if it escapes."""
    parts: list[str] = [] if path.startswith("/") else list(root_parts)
    depth = len(root_parts)

    def inside() -> bool:
        return len(parts) >= depth and parts[:depth] == root_parts

    entered = inside()
    for comp in path.split("/"):
        if comp in ("", "."):
            continue
        if comp == "..":
            if parts:
                parts.pop()
            if entered and not inside():
                return None
            continue
        parts.append(comp)
        entered = entered or inside()
    return parts if inside() else None


def contain_path(root: str, path: str, *, workspace: str = "") -> str:
    """The absolute, normalised path `path` names inside `root`, or a typed error.

    Pure and lexical (no file system): relative paths join `root`, absolute paths must lie
    under it. Symlinks are the sandbox-side layer's job. `""` and `"."` name the root itself.
    """
    if not isinstance(path, str):
        raise InvalidPathError(f"path must be a string, got {type(path).__name__}")
    where = f'workspace "{workspace}" (root {root})' if workspace else f"root {root}"
    if _CONTROL.search(path):
        raise InvalidPathError(
            f"path {path!r} contains a control character (NUL, newline, ...); "
            "name the file without it"
        )
    root = _normalize_root(root)
    root_parts = [p for p in root.split("/") if p]
    parts = _walk(root_parts, path)
    if parts is None:
        raise PathOutsideWorkspaceError(
            f'path "{path}" is outside {where}; use a path relative to the workspace root '
            "that stays inside it, or pick another workspace with `workspace`"
        )
    folded = fold_lookalikes(path)
    if folded != path and _walk(root_parts, folded) is None:
        raise PathOutsideWorkspaceError(
            f'path "{path}" uses characters that look like "/" or "." and reads as '
            f'"{folded}", which is outside {where}; write the path with plain characters'
        )
    return "/" + "/".join(parts)


@dataclass(frozen=True)
class Workspace:
    """One named root inside the sandbox."""

    name: str
    root: str

    def contain(self, path: str) -> str:
        """`path` resolved (lexically) inside this workspace; see `contain_path`."""
        return contain_path(self.root, path, workspace=self.name)

    @functools.cached_property
    def _below(self) -> str | None:
        """The prefix of the paths below a normal root ("/w/"); None when the root is not
        normal (then `relative` always normalises)."""
        if self.root != posixpath.normpath(self.root):
            return None
        return self.root if self.root.endswith("/") else self.root + "/"

    def relative(self, absolute: str) -> str:
        """`absolute` (inside the root) as a path relative to the root; the root itself is "."."""
        prefix = self._below
        if prefix is not None and absolute.startswith(prefix) and "/." not in absolute \
                and "//" not in absolute and not absolute.endswith("/"):
            # Already normal below a normal root (most calls: a language server's answer names
            # a few files each time): what relpath would give, without its normalising.
            return absolute[len(prefix):]
        rel = posixpath.relpath(absolute, self.root)
        return "." if rel == "." else rel


def _check_name(name: str, context: str) -> str:
    if not isinstance(name, str):
        raise WorkspaceError(f"workspace name must be a string, got {type(name).__name__}")
    name = name.strip()
    if not name or name in (".", "..") or _BAD_NAME.search(name):
        raise WorkspaceError(
            f"invalid workspace name {name!r}{context}: names are non-empty and hold no "
            "',', '=', '/', whitespace or control characters (and are not '.' or '..')"
        )
    return name


def _check_root(name: str, root: str) -> str:
    if not isinstance(root, str):
        raise WorkspaceError(
            f'workspace "{name}": root must be a string, got {type(root).__name__}'
        )
    root = root.strip()
    if not root.startswith("/"):
        raise WorkspaceError(
            f'workspace "{name}": root {root!r} is not absolute; workspace roots are '
            "absolute paths inside the sandbox (e.g. /workspaces/svc)"
        )
    if _CONTROL.search(root):
        raise WorkspaceError(f'workspace "{name}": root {root!r} contains a control character')
    return _normalize_root(root)


def _nests(a: str, b: str) -> bool:
    return a == b or b.startswith(a.rstrip("/") + "/")


class WorkspaceSet:
    """Named absolute roots inside one sandbox; the order given is kept, names are unique.

    Build one from the operator form (`WorkspaceSet.parse("primary=/w/svc,extension=/w/lib")`),
    from a mapping (`WorkspaceSet({"primary": "/w/svc"})`), or with `mount()` from host
    directories. `choose(name)` applies the selection policy with fixed error strings.
    """

    def __init__(self, workspaces: Mapping[str, str] | Iterable[Workspace]) -> None:
        items: Iterable[tuple[str, str]]
        if isinstance(workspaces, Mapping):
            items = list(workspaces.items())
        else:
            items = [(w.name, w.root) for w in workspaces]
        checked: dict[str, Workspace] = {}
        for raw_name, raw_root in items:
            name = _check_name(raw_name, "")
            root = _check_root(name, raw_root)
            if name in checked:
                raise WorkspaceError(
                    f'duplicate workspace name "{name}"; give each workspace its own name'
                )
            for other in checked.values():
                if _nests(other.root, root) or _nests(root, other.root):
                    raise WorkspaceError(
                        f'workspace roots overlap: "{other.name}" ({other.root}) and '
                        f'"{name}" ({root}); roots must not contain one another, or one '
                        "workspace could reach the other's files"
                    )
            checked[name] = Workspace(name, root)
        if not checked:
            raise WorkspaceError(
                "no workspaces configured; give at least one, e.g. \"primary=/workspaces/svc\""
            )
        self._by_name = checked

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def parse(cls, spec: str) -> WorkspaceSet:
        """Parse the operator form: `"primary=/w/svc, extension=/w/lib,"`.

        Entries are comma-separated, each `name=path` or just `path` (named by its last
        component). Whitespace around entries, names and paths and empty entries (such as a
        trailing comma) are ignored; duplicate names and relative paths are errors.
        """
        if not isinstance(spec, str):
            raise WorkspaceError(f"workspace spec must be a string, got {type(spec).__name__}")
        pairs: list[tuple[str, str]] = []
        for entry in spec.split(","):
            entry = entry.strip()
            if not entry:
                continue
            if "=" in entry:
                name, _, root = entry.partition("=")
                name = _check_name(name, f" in entry {entry!r}")
            else:
                root = entry
                base = posixpath.basename(_normalize_root(root))
                if not base:
                    raise WorkspaceError(
                        f"cannot name workspace {entry!r} after its last path component; "
                        f"write it as name={entry}"
                    )
                name = _check_name(base, f" (from entry {entry!r})")
            pairs.append((name, root))
        names = [n for n, _ in pairs]
        for name in names:
            if names.count(name) > 1:
                raise WorkspaceError(
                    f'duplicate workspace name "{name}" in {spec!r}; name the entries apart '
                    "with name=path"
                )
        return cls(dict(pairs))

    @classmethod
    def from_mapping(cls, mapping: Mapping[str, str]) -> WorkspaceSet:
        """A set from `{name: root}`."""
        return cls(mapping)

    @classmethod
    def single(cls, root: str, name: str | None = None) -> WorkspaceSet:
        """One workspace at `root`, named `name` or after the root's last component."""
        normal = _check_root(name or "workspace", root)
        return cls({name or posixpath.basename(normal) or "root": normal})

    @classmethod
    def coerce(
        cls, value: WorkspaceSet | str | Mapping[str, str] | None, *, default_root: str
    ) -> WorkspaceSet:
        """Accept what users pass: a set, the operator form, a mapping, or None (one root)."""
        if isinstance(value, WorkspaceSet):
            return value
        if value is None:
            return cls.single(default_root)
        if isinstance(value, str):
            return cls.parse(value)
        return cls(value)

    # ---- the selection policy -------------------------------------------------------------

    @property
    def names(self) -> list[str]:
        """The configured names, sorted (the order error messages list them in)."""
        return sorted(self._by_name)

    def describe(self) -> str:
        """`2 workspaces configured (extension, primary)`."""
        count = len(self._by_name)
        noun = "workspace" if count == 1 else "workspaces"
        return f"{count} {noun} configured ({', '.join(self.names)})"

    def choose(self, name: str | None = None) -> Workspace:
        """The workspace a tool call targets.

        Omitted (None or blank) with one workspace: that one. Omitted with several: an error
        listing them. A name is trimmed and matched case-sensitively. The messages are fixed
        so that agents can switch on them.
        """
        hint = name.strip() if isinstance(name, str) else ""
        if name is not None and not isinstance(name, str):
            raise WorkspaceError(f"workspace must be a string, got {type(name).__name__}")
        if not hint:
            if len(self._by_name) == 1:
                return next(iter(self._by_name.values()))
            raise WorkspaceError(
                f"multi-workspace sandbox: {self.describe()} — pass `workspace` to pick one"
            )
        found = self._by_name.get(hint)
        if found is None:
            raise WorkspaceError(
                f'unknown workspace "{hint}"; configured: {", ".join(self.names)}'
            )
        return found

    def resolve(self, name: str | None = None) -> str:
        """The root of the workspace `choose(name)` picks (the hook verify tools call)."""
        return self.choose(name).root

    def to_spec(self) -> str:
        """The operator form of this set (parses back to an equal set)."""
        return ",".join(f"{w.name}={w.root}" for w in self)

    # ---- container protocol ---------------------------------------------------------------

    def __iter__(self) -> Iterator[Workspace]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> Workspace:
        return self.choose(name)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, WorkspaceSet):
            return NotImplemented
        return list(self) == list(other)

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"WorkspaceSet({self.to_spec()!r})"


_MOUNT_PREFLIGHT = r"""
for d do
  if [ -e "$d" ] || [ -L "$d" ]; then
    [ -d "$d" ] || { echo "workspace root exists and is not a directory: $d" >&2; exit 41; }
    echo "$d"
  fi
done
"""


async def mount(
    sandbox: Sandbox,
    sources: Mapping[str, str | os.PathLike[str]],
    *,
    under: str | None = None,
) -> WorkspaceSet:
    """Copy host directories into the sandbox, one workspace each, and return the set.

    `sources` maps workspace names to host directories; each lands at `<under>/<name>`
    (`under` defaults to the sandbox's worktree). Everything is checked before anything is
    copied; if a copy fails, the roots this call created are removed again.
    """
    base = _check_root("mount", under if under is not None else sandbox.worktree)
    plan: dict[str, tuple[Path, str]] = {}
    for raw_name, host in sources.items():
        name = _check_name(raw_name, " in mount()")
        source = Path(host)
        if not source.exists():
            raise HostPathNotFoundError(
                f'mount: host directory for workspace "{name}" does not exist: {str(source)!r}'
                "; relative paths resolve against the current directory"
            )
        if not source.is_dir():
            raise WorkspaceError(
                f'mount: host path for workspace "{name}" is not a directory: {str(source)!r}'
            )
        plan[name] = (source, posixpath.join(base, name))
    workspaces = WorkspaceSet({name: root for name, (_, root) in plan.items()})
    roots = [root for _, root in plan.values()]
    found = await sandbox.exec(["sh", "-c", _MOUNT_PREFLIGHT, "sandlot-mount", *roots])
    if found.exit_code != 0:
        raise WorkspaceError(f"mount: {found.stderr.strip() or 'preflight failed'}")
    existed = set(found.stdout.splitlines())
    try:
        for source, root in plan.values():
            await sandbox.copy_in(source, root)
    except BaseException:
        created = [root for root in roots if root not in existed]
        if created:
            # Best effort: the copy's own error is the one to report.
            with anyio.CancelScope(shield=True), contextlib.suppress(Exception):
                await sandbox.exec(["rm", "-rf", "--", *created])
        raise
    return workspaces
