"""The agent toolbox: read, write, edit, glob, grep and bash over named workspaces.

Each file tool call is one sandbox round trip (edit: two), whatever the backend: the
containment check, the symlink resolution and the operation run together in one small POSIX
sh script (see scripts.py). Paths are contained per workspace (workspaces.py); writes and
edits of existing files need a prior read (the read-tracker); writes are atomic.

The class is assembled by job: the tool registry (registry.py; schemas and `call` are here),
the shared state and script runner (base.py), the file tools (file_tools.py), the verify tools
(verify_calls.py), the shell tools (shell_tools.py), the snapshot tools
(snapshot_tools.py) and code navigation (lsp_tools.py).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from .. import telemetry
from ..config_errors import describe
from ..errors import SandlotError, ToolError
from ..feedback.checks import DEFAULT_BUDGET, validate_budget
from ..sandbox import Sandbox
from ..secrets import EnvValue, Secret, check_name
from ..workspaces import WorkspaceSet
from .base import DEFAULT_EXCLUDES as DEFAULT_EXCLUDES
from .base import ReadTracker as ReadTracker
from .feedback_step import FeedbackStep
from .file_tools import SEARCH_BYTES as SEARCH_BYTES
from .file_tools import FileTools
from .lsp_tools import NavigationTools
from .models import ErrorResult, ToolResult
from .registry import TOOLS as TOOLS
from .registry import ToolSpec as ToolSpec
from .registry import _strip_titles
from .safe_mode import Containment
from .shell_tools import ShellTools
from .shells import ShellRegistry
from .snapshot_tools import SnapshotTools
from .verify_calls import VerifyTools
from .watch_calls import WatchTools

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Toolbox(FeedbackStep, FileTools, VerifyTools, ShellTools, WatchTools, SnapshotTools,
              NavigationTools):
    """File and shell tools for an agent, over one sandbox and its named workspaces.

        box = Toolbox(sandbox, "svc=/w/svc,lib=/w/lib")
        page = await box.read("go.mod", workspace="svc")
        print(page.text)

    `workspaces` is a `WorkspaceSet`, its operator form, a `{name: root}` mapping, or None
    (one workspace at the sandbox's worktree). `readonly=True` exposes the tools that change
    nothing (read, glob, grep, snapshot_list, snapshot_diff and code navigation but
    rename_symbol). `use_ripgrep=False`
    forces the portable search path even where rg is installed. `env` is added to every
    command the tools run (values may be `Secret`s). After each write and edit the changed
    file's format and lint checks run within `feedback_budget` seconds (`feedback=False` turns
    that off; a call's own `feedback` argument wins). `secrets` are named secrets an agent may
    put in a command's environment by name only (`bash(..., secrets=["NPM_TOKEN"])`); the
    `secret_env` tool lists the names. Every result and error this toolbox returns has every
    secret the sandbox was given replaced by `[secret:NAME]`. `index_timeout` bounds a language
    server's start and indexing (the navigation tools; `timeout` bounds each later answer).
    """

    def __init__(
        self,
        sandbox: Sandbox,
        workspaces: WorkspaceSet | str | Mapping[str, str] | None = None,
        readonly: bool = False,
        *,
        use_ripgrep: bool = True,
        env: Mapping[str, EnvValue] | None = None,
        secrets: Mapping[str, Secret | str] | None = None,
        exclude_dirs: tuple[str, ...] = DEFAULT_EXCLUDES,
        tracker: ReadTracker | None = None,
        timeout: float = 60.0,
        bash_timeout: float = 120.0,
        read_lines: int = 2000,
        read_bytes: int = 256 << 10,
        max_line_chars: int = 2000,
        max_results: int = 500,
        bash_output_bytes: int = 30_000,
        edit_bytes: int = 16 << 20,
        index_timeout: float = 300.0,
        feedback: bool = True,
        feedback_budget: float = DEFAULT_BUDGET,
    ) -> None:
        for name in exclude_dirs:
            if not name or "/" in name or name in (".", ".."):
                raise ToolError(f"exclude_dirs holds {name!r}; give plain directory names")
        self.sandbox = sandbox
        self.workspaces = WorkspaceSet.coerce(workspaces, default_root=sandbox.worktree)
        self.readonly = readonly
        self.use_ripgrep = use_ripgrep
        self.env = sandbox.secrets.reveal_env(env) or {}
        self.secrets = {}
        for name, value in (secrets or {}).items():
            if not _ENV_NAME.fullmatch(check_name(name)):
                raise ToolError(f"secret name {name!r} must also be an environment variable "
                                "name ([A-Za-z_][A-Za-z0-9_]*): it is the command's variable")
            secret = Secret(value, name)
            sandbox.secrets.add(secret, name)
            self.secrets[name] = secret
        self.exclude_dirs = tuple(exclude_dirs)
        self.tracker = tracker if tracker is not None else ReadTracker()
        self.timeout = timeout
        self.bash_timeout = bash_timeout
        self.read_lines = read_lines
        self.read_bytes = read_bytes
        self.max_line_chars = max_line_chars
        self.max_results = max_results
        self.bash_output_bytes = bash_output_bytes
        self.edit_bytes = edit_bytes
        self.index_timeout = index_timeout
        self._lsp = None
        self._lsp_listeners = []
        self.feedback = feedback
        self.feedback_budget = validate_budget(feedback_budget)
        #: Tools already said to be missing (each is said once per toolbox).
        self._feedback_said = set()
        self.shells = ShellRegistry()
        self._containment: Containment | None = None
        #: Called with each output line of a foreground bash or run_code while it runs (the
        #: MCP server turns them into progress notifications).
        self.on_output: Callable[[str], None] | None = None

    def __repr__(self) -> str:
        mode = " readonly" if self.readonly else ""
        return f"<Toolbox {self.workspaces.to_spec()!r}{mode} on {self.sandbox!r}>"

    # ---- the tool surface for agent frameworks ------------------------------------------

    def tool_schemas(self) -> list[dict[str, Any]]:
        """Every offered tool as an OpenAI-style function tool (adr/0017 says why this shape):

            {"type": "function", "function": {"name", "description", "parameters"}}

        `parameters` is the JSON schema of the tool's pydantic argument model; `workspace`
        lists the configured names as an enum and is required when there are several.
        """
        out: list[dict[str, Any]] = []
        for name in self.tool_names:
            spec = TOOLS[name]
            out.append({
                "type": "function",
                "function": {
                    "name": name,
                    "description": spec.description,
                    "parameters": self._parameters(spec.args),
                },
            })
        return out

    def _parameters(self, model: type[BaseModel]) -> dict[str, Any]:
        schema: dict[str, Any] = _strip_titles(model.model_json_schema())
        schema.pop("description", None)
        props: dict[str, Any] = schema.get("properties", {})
        if "workspace" in props:
            props["workspace"] = {
                "type": "string",
                "enum": self.workspaces.names,
                "description": props["workspace"].get("description", ""),
            }
            if len(self.workspaces) > 1:
                schema.setdefault("required", []).append("workspace")
        schema["additionalProperties"] = False
        return schema

    async def call(self, name: str, arguments: Mapping[str, Any] | str | None = None
                   ) -> ToolResult:
        """Run tool `name` with JSON-like `arguments` (a mapping or a JSON string).

        Never raises for a bad call: unknown tools, invalid arguments and tool errors come
        back as an `ErrorResult` whose text tells the agent what to do instead.
        """
        if name not in self.tool_names:
            if name in TOOLS:
                return ErrorResult(tool=name, error="ReadOnlyError",
                                   text=self._readonly_message(name))
            return ErrorResult(tool=name, error="UnknownTool",
                               text=f'unknown tool "{name}"; available: '
                                    f"{', '.join(self.tool_names)}")
        spec = TOOLS[name]
        try:
            if isinstance(arguments, str):
                args = spec.args.model_validate_json(arguments or "{}")
            else:
                args = spec.args.model_validate(dict(arguments or {}))
        except ValidationError as exc:
            problems = describe(exc)
            return ErrorResult(tool=name, error="InvalidArguments",
                               text=f"invalid arguments for {name}: {problems}")
        method: Callable[..., Awaitable[ToolResult]] = getattr(self, name)
        try:
            return await method(**args.model_dump())
        except SandlotError as exc:
            return self.scrubber.value(
                ErrorResult(tool=name, error=type(exc).__name__, text=str(exc)))

    # ---- lifecycle ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """End every background shell this toolbox knows that still runs, and its language
        servers (the sandbox itself stays open)."""
        if self._lsp is not None:
            await self._lsp.aclose()
        for shell in self.shells.all():
            if (await shell.process.info()).running:
                shell.killed = True
                await shell.process.kill()

    async def __aenter__(self) -> Toolbox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _scrubbed(method: Callable[..., Awaitable[ToolResult]]
              ) -> Callable[..., Awaitable[ToolResult]]:
    """A tool method whose result and errors have the sandbox's secrets scrubbed: the one
    exit point of every tool, whether called through `call` or directly."""

    name = method.__name__

    @functools.wraps(method)
    async def tool(self: Toolbox, *args: Any, **kwargs: Any) -> ToolResult:
        # OpenTelemetry's GenAI conventions for a tool call (`execute_tool {name}`).
        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                      "sandlot.sandbox.name": self.sandbox.name}
        with telemetry.span(f"execute_tool {name}", attributes) as current:
            try:
                result = await method(self, *args, **kwargs)
            except SandlotError as exc:
                scrubber = self.scrubber
                if scrubber:
                    exc.args = tuple(scrubber.value(list(exc.args)))
                raise
            if not result.ok:  # the conventions' error.type, only on failure (a raise sets it)
                telemetry.set_attributes(current, {
                    "error.type": result.error if isinstance(result, ErrorResult)
                    else "tool_error"})
            return self.scrubber.value(result)

    return tool


for _name in TOOLS:
    setattr(Toolbox, _name, _scrubbed(getattr(Toolbox, _name)))


def dumps_schemas(toolbox: Toolbox) -> str:
    """The tool schemas as pretty JSON (handy for docs and for eyeballing)."""
    return json.dumps(toolbox.tool_schemas(), indent=2, ensure_ascii=False)
