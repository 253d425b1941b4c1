"""What every part of the toolbox shares: its settings, the read-tracker, the read-only guard,
and running one tool script in the sandbox (through the race-free helper where it can).

`Toolbox` (toolbox.py) is assembled from the file, verify and shell tools (file_tools.py,
verify_calls.py, shell_tools.py), each a mixin over `ToolboxBase`; its `__init__` sets the
attributes declared here.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Callable

from ..errors import ReadOnlyError, ToolError
from ..sandbox import Sandbox
from ..secrets import Scrubber, Secret
from ..workspaces import Workspace, WorkspaceSet
from . import safe_mode, scripts
from .registry import TOOLS
from .runner import ScriptResult, run_in_session, run_script
from .safe_mode import Containment
from .shells import ShellRegistry

#: Directories glob and grep do not descend into (unless the search starts inside one):
#: version-control metadata and dependency trees, which drown every search.
DEFAULT_EXCLUDES: tuple[str, ...] = (".git", ".hg", ".svn", "node_modules")

#: The sh scripts the race-free helper replaces (by its operation name) in `descriptor` mode.
_SAFE_OPS: dict[str, str] = {
    scripts.READ: "read",
    scripts.SLURP: "slurp",
    scripts.WRITE: "write",
    scripts.WRITE_MANY: "write_many",
    scripts.DISCARD: "discard",
    scripts.GREP: "grep",
    scripts.GLOB: "glob",
    scripts.FETCH: "fetch",
    scripts.LIST: "list",
}


class ReadTracker:
    """Absolute (workspace-resolved) paths that were read, so write/edit may change them.

    One tracker serves every workspace of a toolbox: entries are absolute, so reading
    `main.go` in one workspace does not unlock `main.go` in another.
    """

    def __init__(self) -> None:
        self._paths: set[str] = set()

    def mark(self, path: str) -> None:
        self._paths.add(path)

    def __contains__(self, path: object) -> bool:
        return path in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def forget_under(self, root: str) -> None:
        """Unmark every path under `root` (its files were replaced, e.g. by a restore)."""
        prefix = root.rstrip("/") + "/"
        self._paths = {p for p in self._paths if not p.startswith(prefix) and p != root}


class ToolboxBase:
    """The state and helpers the tool mixins share (set by `Toolbox.__init__`)."""

    sandbox: Sandbox
    workspaces: WorkspaceSet
    readonly: bool
    use_ripgrep: bool
    env: dict[str, str]
    #: Named secrets the agent may ask for by name (`secrets=[...]` on bash and verify tools).
    secrets: dict[str, Secret]
    exclude_dirs: tuple[str, ...]
    tracker: ReadTracker
    timeout: float
    bash_timeout: float
    read_lines: int
    read_bytes: int
    max_line_chars: int
    max_results: int
    bash_output_bytes: int
    edit_bytes: int
    shells: ShellRegistry
    _containment: Containment | None
    on_output: Callable[[str], None] | None

    @property
    def tool_names(self) -> list[str]:
        """The tools this toolbox offers (when read-only, only those that change nothing:
        read, glob, grep, snapshot_list, snapshot_diff and code navigation but rename_symbol;
        secret_env only when named secrets are configured)."""
        return [n for n, spec in TOOLS.items() if not (self.readonly and spec.mutating)
                and (n != "secret_env" or self.secrets)]

    @property
    def scrubber(self) -> Scrubber:
        """Scrubs every secret the sandbox was given (this toolbox's included)."""
        return self.sandbox.secrets.scrubber

    def _command_env(self, tool: str, names: list[str] | None) -> dict[str, str]:
        """The toolbox's env plus the named secrets asked for. An unknown name is a tool
        error that lists the configured names (never a value)."""
        if not names:
            return self.env
        unknown = [n for n in names if n not in self.secrets]
        if unknown:
            known = ", ".join(sorted(self.secrets)) or "none (the operator configures them, "\
                "e.g. sandlot mcp --secret NAME=ENVVAR)"
            raise ToolError(f"{tool}: no configured secret named {', '.join(unknown)}; "
                            f"configured secrets: {known}")
        return {**self.env, **{n: self.secrets[n].reveal() for n in names}}

    def _readonly_message(self, tool: str) -> str:
        return (f"{tool} is not available: this toolbox is read-only (readonly=True); "
                f"available tools: {', '.join(self.tool_names)}")

    def _mutating(self, tool: str) -> None:
        if self.readonly:
            raise ReadOnlyError(self._readonly_message(tool))

    async def containment(self) -> Containment:
        """`descriptor` (race-free file tools) or `path` (no python3 in the sandbox); see
        tools/safe_mode.py and adr/0007."""
        if self._containment is None:
            self._containment = await safe_mode.detect(self.sandbox, self.env)
        return self._containment

    async def _run(self, tool: str, script: str, args: list[str], *,
                   stdin: bytes | AsyncIterable[bytes] | None = None,
                   limit: int = 4 << 20) -> ScriptResult:
        op = _SAFE_OPS.get(script)
        result: ScriptResult | None = None
        if op is not None and self._containment != "path":
            # The sandbox's session helper first (no process start); None: it cannot serve
            # this call, and the one-command path below runs it.
            result = await run_in_session(self.sandbox, [script, op, *args], name=tool,
                                          env=self.env, stdin=stdin, timeout=self.timeout,
                                          limit=limit)
            if result is not None and self._containment is None:
                self._containment = "descriptor"  # the helper runs on python3 >= 3.8
            script, args = safe_mode.LAUNCH, [safe_mode.HELPER_SOURCE, script, op, *args]
        if result is None:
            result = await run_script(self.sandbox, script, args, name=tool, env=self.env,
                                      stdin=stdin, timeout=self.timeout, limit=limit)
        if op is not None and self._containment is None:
            if safe_mode.PATH_MODE_NOTE in result.stderr:
                self._containment = "path"
                safe_mode.warn(self.sandbox)
            else:
                self._containment = "descriptor"
        if result.timed_out:
            raise ToolError(f"{tool} timed out after {self.timeout:g}s in the sandbox; "
                            "narrow the path or pattern")
        return result

    def _target(self, path: str | None, workspace: str | None) -> tuple[Workspace, str]:
        ws = self.workspaces.choose(workspace)
        return ws, ws.contain(path or "")

    def _cut_line(self, text: str) -> tuple[str, bool]:
        if len(text) <= self.max_line_chars:
            return text, False
        return text[: self.max_line_chars] + f" …[line cut at {self.max_line_chars} chars]", True
