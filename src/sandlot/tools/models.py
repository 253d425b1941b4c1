"""Arguments and results of the agent tools, as pydantic models.

The argument models ARE the tool schemas agent frameworks register (`Toolbox.tool_schemas`);
their field descriptions are what the model reads, so they say how to call the tool well.
Every result carries `text` (what to show the model) plus structured fields for programs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..verify.filecheck import FileFeedback

#: The `secrets` argument of bash and the verify tools.
SECRETS = (
    "Names of configured secrets (see secret_env) to put in the command's environment, each "
    "as the variable of its name. You never see the values: any output that holds one shows "
    "[secret:NAME] instead."
)

_WORKSPACE = (
    "Name of the workspace (repository root) to act in. Optional when the sandbox has one "
    "workspace; required when it has several."
)
_FEEDBACK = (
    "Check the file after the change with the project's formatter and linter (gofmt + go "
    "vet, ruff, prettier + eslint, rustfmt) and report what they find. Default: on; false "
    "skips it (e.g. for a file mid-way through several edits)."
)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReadArgs(_Args):
    """Read a text file from the workspace, with line numbers."""

    path: str = Field(description="File path, relative to the workspace root (or absolute "
                      "inside it).")
    offset: int | None = Field(default=None, ge=0, description="1-based line to start at "
                               "(0 and omitted mean the first line). Use it to page large "
                               "files.")
    limit: int | None = Field(default=None, ge=1, description="How many lines to return "
                              "(default 2000).")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class WriteArgs(_Args):
    """Write a whole file (created with its parent directories, or replaced)."""

    path: str = Field(description="File path, relative to the workspace root.")
    content: str = Field(description="The complete new content of the file.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)
    feedback: bool | None = Field(default=None, description=_FEEDBACK)


class EditArgs(_Args):
    """Replace exact text in a file."""

    path: str = Field(description="File path, relative to the workspace root.")
    old: str = Field(description="The exact text to replace, including whitespace and "
                     "indentation; it must occur exactly once unless replace_all is true.")
    new: str = Field(description="The text to put in its place (must differ from old).")
    replace_all: bool = Field(default=False, description="Replace every occurrence of old.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)
    feedback: bool | None = Field(default=None, description=_FEEDBACK)


class GlobArgs(_Args):
    """Find files by name pattern."""

    pattern: str = Field(description="Glob: `*` and `?` within a name, `**` across "
                         "directories, `{a,b}` alternatives, `[abc]` classes. A pattern "
                         "without `/` matches file names at any depth (`*.go`).")
    path: str | None = Field(default=None, description="Directory to search in, relative to "
                             "the workspace root (default: the root).")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class GrepArgs(_Args):
    """Search file contents with a regular expression."""

    pattern: str = Field(description="Regular expression (ripgrep syntax when ripgrep is "
                         "installed, else POSIX extended; `\\d`, `\\w`, `\\s` work in both).")
    path: str | None = Field(default=None, description="File or directory to search, "
                             "relative to the workspace root (default: the root).")
    glob: str | None = Field(default=None, description="Only search files matching this "
                             "glob, e.g. `*.ts` or `src/**/*.go`.")
    ignore_case: bool = Field(default=False, description="Match case-insensitively.")
    context: int = Field(default=0, ge=0, le=50, description="Lines of context to show "
                         "before and after each match.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)


class BashArgs(_Args):
    """Run a shell command in the workspace root."""

    command: str = Field(description="The command line, run with `sh -c` in the workspace "
                         "root.")
    timeout: float | None = Field(default=None, gt=0, le=3600, description="Seconds before "
                                  "the command (and everything it started) is ended. Default "
                                  "120 in the foreground, none in the background.")
    idle_timeout: float | None = Field(default=None, gt=0, le=3600, description="Seconds "
                                       "without any output after which the command is ended "
                                       "(e.g. one stuck at a prompt). Default none.")
    background: bool = Field(default=False, description="Start it in the background and "
                             "return a shell_id at once; read it with bash_output, end it "
                             "with kill_shell.")
    workspace: str | None = Field(default=None, description=_WORKSPACE)
    secrets: list[str] | None = Field(default=None, description=SECRETS)


class BashOutputArgs(_Args):
    """Read what a background shell printed since the last read, and its status."""

    shell_id: str = Field(description="The shell_id bash returned.")


class KillShellArgs(_Args):
    """End a background shell and everything it started."""

    shell_id: str = Field(description="The shell_id bash returned.")


class RunCodeArgs(_Args):
    """Run a snippet of code in a runtime mode."""

    code: str = Field(description="The program's source, run as one file.")
    mode: Literal["python", "golang", "node", "shell"] | None = Field(
        default=None, description="Runtime: python, golang, node or shell (bash). Omitted: "
        "the sandbox's configured mode ($SANDLOT_MODE), else the first one installed.")
    requirements: list[str] = Field(
        default_factory=list, description="Packages to install first (pip for python, npm "
        "for node), e.g. [\"requests==2.32.3\"].")
    timeout: float | None = Field(default=None, gt=0, description="Seconds before the run "
                                  "(installs included) is ended (default 120).")


# ---- results ----------------------------------------------------------------------------


class SecretEnvArgs(_Args):
    """List the secrets the operator configured (names only)."""


class ToolResult(BaseModel):
    """What every tool returns: `text` for the model, plus the fields of its subclass."""

    tool: str
    ok: bool = True
    text: str


class ErrorResult(ToolResult):
    """A call that failed; `text` is the error message, `error` its type name."""

    ok: bool = False
    error: str


class ReadResult(ToolResult):
    workspace: str
    path: str
    size: int
    total_lines: int
    start_line: int
    end_line: int
    more: bool = Field(description="Lines after end_line exist (page with offset).")
    cut_lines: int = Field(description="Lines shortened because they were too long.")


_FEEDBACK_RESULT = ("The changed file's format and lint checks (None: turned off, or no "
                    "checks for its language).")


class WriteResult(ToolResult):
    workspace: str
    path: str
    bytes_written: int
    created: bool
    feedback: FileFeedback | None = Field(default=None, description=_FEEDBACK_RESULT)


class EditResult(ToolResult):
    workspace: str
    path: str
    replacements: int
    bytes_written: int
    feedback: FileFeedback | None = Field(default=None, description=_FEEDBACK_RESULT)


class GlobResult(ToolResult):
    workspace: str
    pattern: str
    paths: list[str]
    total: int
    truncated: bool
    engine: Literal["rg", "find"]


class GrepLine(BaseModel):
    """One output line of a search: a match, or context around one."""

    path: str
    line: int
    text: str
    match: bool = True


class GrepResult(ToolResult):
    workspace: str
    pattern: str
    lines: list[GrepLine]
    files: list[str] = Field(description="Files with at least one match, in order.")
    binary_files: list[str] = Field(description="Binary files that match (not shown).")
    truncated: bool
    engine: Literal["rg", "grep"]


class BashResult(ToolResult):
    workspace: str
    command: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    shell_id: str | None = None


class RunCodeResult(ToolResult):
    mode: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    truncated: bool = False
    notes: list[str] = Field(default_factory=list)


#: `lost`: the shell's supervisor is gone without an exit status (the sandbox restarted).
ShellStatus = Literal["running", "exited", "killed", "timed_out", "lost"]


class BashOutputResult(ToolResult):
    shell_id: str
    status: ShellStatus
    exit_code: int | None
    output: str
    dropped_bytes: int = Field(
        description="Output bytes skipped because the shell's bounded output files no longer "
                    "held them.")
    more: bool = Field(description="More output is waiting: call bash_output again.")


class KillShellResult(ToolResult):
    shell_id: str
    status: ShellStatus
    exit_code: int | None


class SecretEnvResult(ToolResult):
    """The configured secret names (values are never shown)."""

    names: list[str]
