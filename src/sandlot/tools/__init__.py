"""Agent tools over named workspaces: read, write, edit, glob, grep, bash, and the verify
tools (run_tests, run_lint, run_typecheck, run_failing_tests, run_script) in the chosen
workspace, and run_code (a snippet in a runtime mode).

    from sandlot.tools import Toolbox

    box = Toolbox(sandbox, "svc=/w/svc,lib=/w/lib")
    result = await box.grep("func main", workspace="svc")
    print(result.text)             # for the model
    result.files                   # for programs

`Toolbox.tool_schemas()` gives every tool as a function tool an agent framework can register,
and `Toolbox.call(name, arguments)` runs one from a model's tool call.
"""

from .models import (
    BashOutputResult,
    BashResult,
    EditResult,
    ErrorResult,
    GlobResult,
    GrepLine,
    GrepResult,
    KillShellResult,
    ReadResult,
    RunCodeResult,
    SecretEnvResult,
    ToolResult,
    WriteResult,
)
from .toolbox import DEFAULT_EXCLUDES, TOOLS, ReadTracker, Toolbox, ToolSpec
from .verify_tools import VerifyResult

__all__ = [
    "DEFAULT_EXCLUDES",
    "TOOLS",
    "BashOutputResult",
    "BashResult",
    "EditResult",
    "ErrorResult",
    "GlobResult",
    "GrepLine",
    "GrepResult",
    "KillShellResult",
    "ReadResult",
    "ReadTracker",
    "RunCodeResult",
    "SecretEnvResult",
    "ToolResult",
    "ToolSpec",
    "Toolbox",
    "VerifyResult",
    "WriteResult",
]
