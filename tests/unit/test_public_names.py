"""The public names are pinned (issue 27): `sandlot.__all__` and every public module's.

A name added to or dropped from a public `__all__` fails here until this list is updated on
purpose, as httpx pins its own. Every error class in `sandlot.errors` is exported from `sandlot`,
the four that lived elsewhere are the same objects at their old import paths, and the tree in
errors.py's docstring is the real hierarchy.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

import sandlot
import sandlot.errors

SOURCE = Path(sandlot.__file__).parent

PINNED: dict[str, list[str]] = {
    "sandlot": [
        "AmbiguousLanguageError", "ArgumentsTooLongError", "BackendUnavailableError",
        "BranchExistsError", "BundleTooLargeError", "CleanupError", "CoderAgentError",
        "CoderAgentSelectionError", "CoderAttachOptions", "CoderBuildFailedError", "CoderCLIError",
        "CoderCLINotFoundError", "CoderCreateOptions", "CoderNotLoggedInError",
        "CoderUnreachableError", "CoderWorkspaceNotFoundError", "CommandError", "CommandFailed",
        "CommandTimedOut", "ConfigurationError", "ConnectionLostError", "CoverageToolMissingError",
        "DockerMount",
        "DockerOptions", "DockerProvider", "EditMatchError", "ExecResult", "ForeignSnapshotError",
        "ForkError", "ForkSourceClosedError", "ForwardRelayMissingError", "GitDestinationError",
        "GitError", "GitNotFoundError",
        "GitRefNotFoundError", "GitStepTimeoutError", "HostPathNotFoundError", "ImageNotFoundError",
        "InvalidBranchNameError", "InvalidEnvError", "InvalidPathError", "InvalidTokenError",
        "IsolatedSandboxProvider", "LanguageNotDetectedError", "LanguageServerCrashedError",
        "LanguageServerError", "LanguageServerNotInstalledError", "LanguageServerRequestError",
        "LanguageServerTimeoutError", "LinterNotInstalledError",
        "LocalOptions", "LocalProvider", "NoLanguageServerError", "NoProjectDetectedError",
        "NoTestRunError",
        "NotAGitRepositoryError", "NotReadError", "NotSupportedError", "PathOutsideWorkspaceError",
        "PortForwardUnsupportedError", "Process", "ProcessNotFoundError", "ProcessRecordError",
        "ProcessStartError", "ProcessStillRunningError", "ProviderConfig", "ProviderError",
        "ReadOnlyError", "RequirementsInstallError", "RuntimeNotFoundError", "SSHConnectError",
        "Sandbox", "SandboxClosed", "SandboxGitOutputError", "SandboxGoneError",
        "SandboxPausedError", "SandboxRepositoryError", "SandboxStartError", "SandlotError",
        "Secret",
        "ServerAuthError", "ServerBusyError", "ServerInstallError", "ServerRateLimitedError",
        "ServerRejectedError", "ServerRequestError", "ServerTimeoutError", "ServerUnavailableError",
        "ServerUnreachableError", "Snapshot", "SnapshotBusyError", "SnapshotChange",
        "SnapshotDiff", "SnapshotDiffTooLargeError", "SnapshotDiskFullError", "SnapshotError",
        "SnapshotNotFoundError", "SnapshotToolsMissingError", "SourceChangedError", "ToolError",
        "ToolNotFoundError",
        "TransferError", "UnknownLanguageError", "UnknownModeError", "UnknownScriptError",
        "VerifyError", "VerifyToolFailedError", "VerifyToolMissingError", "WorkspaceError",
        "__version__", "coder", "docker", "fanout", "fork", "git", "local", "parse_config",
        "provider_from_config", "provider_from_env",
    ],
    "sandlot.backends.coder": [
        "CoderAttachOptions", "CoderCreateOptions", "CoderOptions", "OnClose", "coder",
    ],
    "sandlot.backends.docker": [
        "DockerMount", "DockerOptions", "DockerProvider", "DockerSandbox", "docker",
    ],
    "sandlot.snapshots": ["DIFF_LIMIT", "Snapshot", "SnapshotChange", "SnapshotDiff"],
    "sandlot.fanout": [
        "DEFAULT_MAX_PARALLEL", "FanoutEvent", "FanoutReport", "Job", "SandboxOutcome", "Slot",
        "Stage", "Timings", "run",
    ],
    "sandlot.git": [
        "BASE_REF", "Commit", "FileChange", "FileStat", "GitCheckout", "GitDiff", "PullResult",
        "diff", "pull_out", "push_in",
    ],
    "sandlot.integrations.deepagents": ["SandlotBackend", "SandlotProvider"],
    "sandlot.integrations.openai_agents": [
        "SandlotSandboxClient", "SandlotSandboxClientOptions", "SandlotSandboxSession",
        "SandlotSandboxSessionState",
    ],
    "sandlot.mcp_server": [
        "build_server", "tool_list",
    ],
    "sandlot.fswatch": ["DEFAULT_QUEUE", "FileEvent", "FileWatch"],
    "sandlot.feedback": ["DEFAULT_BUDGET", "FeedbackCheck", "FileFeedback", "check_file"],
    "sandlot.modes": [
        "Health", "MODES", "MODE_ENV", "Mode", "RunResult", "configured_mode", "detect_mode",
        "get_mode", "health", "run_code",
    ],
    "sandlot.processes": [
        "DEFAULT_PATTERNS", "DurableProcess", "DurableProcessInfo", "DurableProcesses",
        "EndedBy", "OutputChunk", "ProcessEvent", "ProcessRecordError", "ProcessState",
    ],
    "sandlot.secrets": [
        "EnvText", "EnvValue", "GLOBAL", "Scrubber", "Secret", "SecretSet", "StreamScrubber",
        "check_name", "marker", "reveal", "secret_from_spec", "secrets_from_specs",
    ],
    "sandlot.sync": [
        "SyncDurableProcess", "SyncDurableProcesses", "SyncProcess", "SyncSandbox", "session",
    ],
    "sandlot.testing": [
        "AgentSpec", "DEFAULT_URL", "FakeCoderDeployment", "ParameterSpec",
    ],
    "sandlot.tools": [
        "BashOutputResult", "BashResult", "DEFAULT_EXCLUDES", "EditResult", "ErrorResult",
        "GlobResult", "GrepLine", "GrepResult", "KillShellResult", "ReadResult", "ReadTracker",
        "RunCodeResult", "SecretEnvResult", "TOOLS", "ToolResult", "ToolSpec", "Toolbox",
        "VerifyResult", "WriteResult",
    ],
    "sandlot.lsp": [
        "Diagnostic", "FileChange", "Hover", "LanguageServers", "Location", "Rename", "Span",
        "Symbol", "TextChange", "detector_for",
    ],
    "sandlot.verify": [
        "Coverage", "Detector", "FileCoverage", "Finding", "LintReport", "SUPPORTED",
        "ScriptResult", "SkippedTarget",
        "TestFailure", "TestReport", "TypecheckReport", "Workspace", "WorkspaceResolver",
        "detect_all", "detectors_for", "last_test_failures", "run_failing_tests", "run_lint",
        "run_script", "run_tests", "run_typecheck",
    ],
    "sandlot.workspaces": [
        "Workspace", "WorkspaceSet", "contain_path", "fold_lookalikes", "mount",
    ],
}  # fmt: skip


def modules_defining_all() -> set[str]:
    found = set()
    for path in SOURCE.rglob("*.py"):
        if re.search(r"^__all__\b", path.read_text(encoding="utf-8"), re.MULTILINE):
            parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_module_that_defines_all_is_pinned() -> None:
    assert modules_defining_all() == set(PINNED)


@pytest.mark.parametrize("module_name", sorted(PINNED))
def test_all_is_pinned_and_every_name_resolves(module_name: str) -> None:
    module = importlib.import_module(module_name)
    exported = list(module.__all__)
    assert len(exported) == len(set(exported)), "a name is exported twice"
    assert sorted(exported) == PINNED[module_name]
    for name in exported:
        assert hasattr(module, name), f"{module_name}.{name} is exported but not defined"


def error_classes() -> list[type[BaseException]]:
    return [
        value for value in vars(sandlot.errors).values()
        if inspect.isclass(value) and issubclass(value, BaseException)
        and value.__module__ == "sandlot.errors"
    ]  # fmt: skip


def test_every_error_is_exported_from_sandlot() -> None:
    missing = [cls.__name__ for cls in error_classes() if cls.__name__ not in sandlot.__all__]
    assert missing == []
    for cls in error_classes():
        assert getattr(sandlot, cls.__name__) is cls
        assert issubclass(cls, sandlot.SandlotError)


def test_every_sandlot_error_class_lives_in_errors_py() -> None:
    # Walk the package's own classes: an error defined anywhere else is a stray.
    strays = []
    for path in SOURCE.rglob("*.py"):
        if "testing" in path.parts:
            continue
        for match in re.finditer(r"^class (\w+)\((\w+)", path.read_text(encoding="utf-8"),
                                 re.MULTILINE):
            name, base = match.groups()
            parent = getattr(sandlot.errors, base, None)
            if (path.name != "errors.py" and isinstance(parent, type)
                    and issubclass(parent, BaseException)):
                strays.append(f"{path.relative_to(SOURCE)}: {name}")
    assert strays == []


@pytest.mark.parametrize(
    ("module_name", "name"),
    [("sandlot.ssh", "SSHConnectError"), ("sandlot.processes.parse", "ProcessRecordError"),
     ("sandlot.forward", "ForwardRelayMissingError"),
     ("sandlot.forward", "PortForwardUnsupportedError")],
)  # fmt: skip
def test_moved_errors_still_import_from_their_old_homes(module_name: str, name: str) -> None:
    assert getattr(importlib.import_module(module_name), name) is getattr(sandlot.errors, name)


def drawn_tree() -> list[str]:
    classes = error_classes()

    def below(parent: type[BaseException], depth: int) -> list[str]:
        lines = []
        for cls in classes:
            if cls.__bases__[0] is parent:
                others = ", ".join(base.__name__ for base in cls.__bases__[1:])
                also = f"  (also {others})" if others else ""
                lines.append("  " * depth + cls.__name__ + also)
                lines += below(cls, depth + 1)
        return lines

    return ["SandlotError", *below(sandlot.SandlotError, 1)]


def test_the_tree_atop_errors_py_is_the_hierarchy() -> None:
    doc = sandlot.errors.__doc__ or ""
    start = doc.index("    SandlotError\n")
    drawn = [line[4:] for line in doc[start:].rstrip().splitlines()]
    assert drawn == drawn_tree()
