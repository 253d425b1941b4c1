"""The exception hierarchy: every error sandlot raises on purpose is a `SandlotError`.

Each error carries the context a reader needs to act (which sandbox, which command, the stderr
of the failing tool) and says what to do. Secrets never reach a message: classes that take
free-form text from tools pass it through `redact()` first.

The hierarchy (a class's first base is its parent; "also" names its other bases). Every class
here is exported from `sandlot`; tests/unit/test_public_names.py holds this tree, the classes
and `sandlot.__all__` together:

    SandlotError
      ConfigurationError  (also ValueError)
        InvalidEnvError
        InvalidPathError
        ArgumentsTooLongError
        HostPathNotFoundError  (also FileNotFoundError)
        WorkspaceError
          PathOutsideWorkspaceError
        UnknownModeError
        InvalidTokenError
        CoderAgentSelectionError
      ToolError
        ReadOnlyError
        NotReadError
        EditMatchError
      SandboxClosed
      CommandError
        CommandFailed
        CommandTimedOut
        RequirementsInstallError
      TransferError
        SourceChangedError
      RuntimeNotFoundError
      ServerRequestError
        ServerAuthError
        ServerBusyError
          ServerRateLimitedError
          ServerUnavailableError
        ServerRejectedError
          ServerInstallError
        ServerTimeoutError
        ServerUnreachableError
      ProviderError
        ToolNotFoundError
          CoderCLINotFoundError
        BackendUnavailableError
          CoderUnreachableError
        ConnectionLostError
          SSHConnectError
          SandboxPausedError
        SandboxGoneError
        SandboxStartError
          ImageNotFoundError
          CoderAgentError
        CleanupError
        CoderNotLoggedInError
        CoderCLIError
          CoderWorkspaceNotFoundError  (also SandboxStartError)
          CoderBuildFailedError  (also SandboxStartError)
      VerifyError
        NoProjectDetectedError  (also ConfigurationError)
        AmbiguousLanguageError  (also ConfigurationError)
        LanguageNotDetectedError  (also ConfigurationError)
        UnknownLanguageError  (also ConfigurationError)
        UnknownScriptError  (also ConfigurationError)
        VerifyToolMissingError
          LinterNotInstalledError
          CoverageToolMissingError
        VerifyToolFailedError  (also CommandError)
        NoTestRunError
      GitError
        GitNotFoundError
        NotAGitRepositoryError  (also ConfigurationError)
        GitRefNotFoundError  (also ConfigurationError)
        InvalidBranchNameError  (also ConfigurationError)
        BranchExistsError
        SandboxRepositoryError
        GitDestinationError  (also ConfigurationError)
        SandboxGitOutputError
        GitStepTimeoutError
        BundleTooLargeError
      ProcessNotFoundError  (also LookupError)
      ProcessStillRunningError
      ProcessStartError
      ProcessRecordError
      ForwardRelayMissingError
      PortForwardUnsupportedError
      SnapshotError
        SnapshotToolsMissingError
        SnapshotNotFoundError  (also LookupError)
        ForeignSnapshotError  (also ConfigurationError)
        SnapshotBusyError
        SnapshotDiskFullError
        SnapshotDiffTooLargeError
      ForkError
        ForkSourceClosedError  (also SandboxClosed)
      NotSupportedError
      LanguageServerError
        LanguageServerNotInstalledError  (also VerifyToolMissingError)
        LanguageServerCrashedError
        LanguageServerTimeoutError
        LanguageServerRequestError
        NoLanguageServerError  (also ConfigurationError)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Self

_SECRET_PATTERNS: list[re.Pattern[str]] = []
#: More redactors (sandlot.secrets adds the scrubber of every `Secret` a sandbox was given).
_REDACTORS: list[Callable[[str], str]] = []


def add_redactor(redactor: Callable[[str], str]) -> None:
    """Run `redactor` over every message `redact` masks."""
    if redactor not in _REDACTORS:
        _REDACTORS.append(redactor)


def register_secret(value: str) -> None:
    """Remember a secret (e.g. a Coder session token) so it is masked in every later message."""
    if value and len(value) >= 4:
        pattern = re.compile(re.escape(value))
        if all(p.pattern != pattern.pattern for p in _SECRET_PATTERNS):
            _SECRET_PATTERNS.append(pattern)


def redact(text: str) -> str:
    """Mask every registered secret in `text`."""
    for pattern in _SECRET_PATTERNS:
        text = pattern.sub("***", text)
    for redactor in _REDACTORS:
        text = redactor(text)
    return text


def _tail(text: str, limit: int = 2000) -> str:
    text = redact(text.strip())
    return text if len(text) <= limit else "..." + text[-limit:]


@dataclass(frozen=True)
class Hint:
    """A fix that is a keyword argument in Python and a flag on the command line.

    A message (of an error, or a note) words it as `python`; the `sandlot` command shows its
    own flag for `keyword` instead (sandlot.cli.in_cli_words), so the Python API keeps its
    wording and the CLI never asks for a keyword argument.
    """

    keyword: str
    python: str


FORCE = Hint("force", "pass force=True")
COMMIT_UNCOMMITTED = Hint("commit_uncommitted", "pass commit_uncommitted='message'")
CODER_BINARY = Hint("coder_binary", "pass coder_binary='/path/to/coder'")
#: Every hint a message may carry.
HINTS: tuple[Hint, ...] = (FORCE, COMMIT_UNCOMMITTED, CODER_BINARY)


class SandlotError(Exception):
    """Base class of every error sandlot raises on purpose."""

    #: The fix, when it is a keyword argument (its Python wording is in the message).
    hint: Hint | None = None

    def __init__(self, message: str) -> None:
        super().__init__(redact(message))

    @property
    def message(self) -> str:
        return str(self)

    def hinted(self, hint: Hint) -> Self:
        """This error, marked as carrying `hint`'s wording (for `raise Error(...).hinted()`)."""
        self.hint = hint
        return self


# --- Bad input: the caller can fix these without touching any infrastructure. ---


class ConfigurationError(SandlotError, ValueError):
    """Invalid options or arguments; the message says which and how to fix it."""


class InvalidEnvError(ConfigurationError):
    """An environment variable name that is not a POSIX name."""


class InvalidPathError(ConfigurationError):
    """A sandbox path that is not absolute, or otherwise unusable."""


class ArgumentsTooLongError(ConfigurationError):
    """A command line longer than one argument may be (128 KiB on Linux); pass big input
    through stdin instead."""


class HostPathNotFoundError(ConfigurationError, FileNotFoundError):
    """A host path given to copy_in (or as a mount) does not exist."""


# --- Workspaces and the agent toolbox (sandlot.workspaces, sandlot.tools). ---


class WorkspaceError(ConfigurationError):
    """A workspace set that cannot be used, or a `workspace` argument that names none of it.

    The messages of the "which workspace" errors are fixed strings agents can switch on.
    """


class PathOutsideWorkspaceError(WorkspaceError):
    """A path that leaves its workspace root (`..`, absolute elsewhere, a symlink out)."""


class ToolError(SandlotError):
    """An agent tool call that cannot be done as asked; the message says what to do instead."""


class ReadOnlyError(ToolError):
    """A mutating tool was called on a read-only toolbox."""


class NotReadError(ToolError):
    """Write or edit of an existing file that was not read first (or changed since)."""


class EditMatchError(ToolError):
    """`edit`'s `old` text matched zero times, or several times without `replace_all`."""

    def __init__(self, message: str, *, count: int) -> None:
        self.count = count
        super().__init__(message)


# --- Lifecycle. ---


class SandboxClosed(SandlotError):
    """The sandbox was closed; create a new one (e.g. with `provider.session()`)."""


# --- Running commands. ---


class CommandError(SandlotError):
    """A command in the sandbox ended badly and the caller asked for `check=True`."""

    def __init__(
        self, message: str, *, command: str, exit_code: int | None, stderr: str = ""
    ) -> None:
        self.command = redact(command)
        self.exit_code = exit_code
        self.stderr = _tail(stderr)
        detail = f"\nstderr (tail):\n{self.stderr}" if self.stderr else ""
        super().__init__(f"{message}{detail}")


class CommandFailed(CommandError):
    """The command exited with a non-zero status."""


class CommandTimedOut(CommandError):
    """The command ran past its timeout; its whole process tree was ended."""


class TransferError(SandlotError):
    """copy_in / copy_out failed; the destination was left as it was before."""


class SourceChangedError(TransferError):
    """A file of a directory given to copy_in changed (grew, shrank, went away) while it was
    read, so the copy could not be consistent; nothing was published. `path` is the host
    path of the (first) file; copy a snapshot, or stop the writer, and copy again."""

    def __init__(self, message: str, *, path: str) -> None:
        self.path = path
        super().__init__(message)


# --- Runtime modes (sandlot.modes). ---


class UnknownModeError(ConfigurationError):
    """A mode name that is not one of python, golang, node, shell."""


class RuntimeNotFoundError(SandlotError):
    """The runtime a mode needs (python3, go, node, bash) is not on the sandbox's PATH."""

    def __init__(self, message: str, *, mode: str | None, binaries: tuple[str, ...]) -> None:
        self.mode = mode
        self.binaries = binaries
        super().__init__(message)


class RequirementsInstallError(CommandError):
    """Installing a run's requirements failed; the code was not run. Carries the installer's
    stderr (tail) and exit code."""

    def __init__(
        self,
        message: str,
        *,
        command: str,
        exit_code: int | None,
        stderr: str = "",
        installer: str,
        requirements: tuple[str, ...],
    ) -> None:
        self.installer = installer
        self.requirements = requirements
        super().__init__(message, command=command, exit_code=exit_code, stderr=stderr)


# --- The HTTP sandbox server's client (sandlot.server.client). ---


class ServerRequestError(SandlotError):
    """A request to a sandlot sandbox server failed; `status` is the HTTP status (None when no
    answer came) and `error` the server's machine-readable code."""

    def __init__(
        self, message: str, *, status: int | None = None, error: str = "", url: str = ""
    ) -> None:
        self.status = status
        self.error = error
        self.url = url
        super().__init__(message)


class InvalidTokenError(ConfigurationError):
    """A bearer token that cannot go into an HTTP header (whitespace, control or non-ASCII
    characters); the message says where, never what."""


class ServerAuthError(ServerRequestError):
    """401: the bearer token is missing or wrong; pass the server's $SANDLOT_TOKEN."""


class ServerBusyError(ServerRequestError):
    """429 (too many runs at once) or 503 (shutting down, sandbox unavailable, overloaded):
    retry later; `retry_after` is the server's hint in seconds, if it gave one."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error: str = "",
        url: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(message, status=status, error=error, url=url)


class ServerRateLimitedError(ServerBusyError):
    """429: the server's limit of concurrent runs is reached."""


class ServerUnavailableError(ServerBusyError):
    """503: the server is shutting down or its sandbox does not answer."""


class ServerRejectedError(ServerRequestError):
    """413 or 422: the request was invalid or too large; the message says which limit."""


class ServerInstallError(ServerRejectedError):
    """422 `requirements_install_failed`: the code was not run; carries the installer's stderr."""

    def __init__(
        self,
        message: str,
        *,
        installer: str,
        exit_code: int | None,
        stderr: str,
        status: int | None = 422,
        url: str = "",
    ) -> None:
        self.installer = installer
        self.exit_code = exit_code
        self.stderr = _tail(stderr)
        super().__init__(message, status=status, error="requirements_install_failed", url=url)


class ServerTimeoutError(ServerRequestError):
    """No answer within the client's timeout (or 504 from the server)."""


class ServerUnreachableError(ServerRequestError):
    """The server could not be reached (connection refused, DNS failure, reset)."""


# --- Backends and the infrastructure under them. ---


class ProviderError(SandlotError):
    """A backend could not do what was asked; carries the provider and sandbox names."""

    def __init__(self, message: str, *, provider: str = "", sandbox: str = "") -> None:
        self.provider = provider
        self.sandbox = sandbox
        where = ", ".join(p for p in (provider, sandbox) if p)
        super().__init__(f"[{where}] {message}" if where else message)


class ToolNotFoundError(ProviderError):
    """A host program the backend drives (coder, docker, bwrap, ssh) is not installed."""


class BackendUnavailableError(ProviderError):
    """The backend's service cannot be reached (Docker engine down, Coder URL unreachable)."""


class ConnectionLostError(ProviderError):
    """The connection to the sandbox dropped; the next call reconnects."""


class SSHConnectError(ConnectionLostError):
    """An SSH connection through the proxy could not be made; `proxy_stderr` says why."""

    def __init__(
        self, message: str, *, proxy_stderr: str = "", provider: str = "", sandbox: str = ""
    ) -> None:
        self.proxy_stderr = redact(proxy_stderr.strip())
        detail = f"\nproxy stderr (tail):\n{self.proxy_stderr[-2000:]}" if self.proxy_stderr else ""
        super().__init__(f"{message}{detail}", provider=provider, sandbox=sandbox)


class SandboxPausedError(ConnectionLostError):
    """The sandbox is frozen (a paused container): calls fail instead of waiting; the next call
    after it is resumed works."""


class SandboxGoneError(ProviderError):
    """The sandbox disappeared from outside while in use (container removed, workspace deleted)."""


class SandboxStartError(ProviderError):
    """The sandbox could not be created or started."""


class ImageNotFoundError(SandboxStartError):
    """The image a sandbox needs is not available to the engine (not local, not pullable)."""


class CleanupError(ProviderError):
    """Applying `on_close` failed; the message names what may be left behind."""


def join_errors(errors: Iterable[BaseException]) -> str:
    """One message from several errors, e.g. a create failure and the cleanup failure after it."""
    return "; then ".join(f"{type(e).__name__}: {e}" for e in errors)


# --- Verify tools (sandlot.verify): what ran, where, and what to do about it. ---


class VerifyError(SandlotError):
    """A verify tool (run_tests, run_lint, ...) could not produce a report."""


class NoProjectDetectedError(VerifyError, ConfigurationError):
    """No marker file (go.mod, Cargo.toml, package.json, pyproject.toml, setup.py) at the root."""


class AmbiguousLanguageError(VerifyError, ConfigurationError):
    """Several project types at one root and no `language` given to pick one."""


class LanguageNotDetectedError(VerifyError, ConfigurationError):
    """`language` names a supported language whose marker is not at the root."""


class UnknownLanguageError(VerifyError, ConfigurationError):
    """`language` is not one of the supported languages."""


class UnknownScriptError(VerifyError, ConfigurationError):
    """`run_script` was asked for a package.json script that is not defined."""


class VerifyToolMissingError(VerifyError):
    """A program a verify tool needs is not installed in the sandbox (`binary` names it)."""

    def __init__(self, message: str, *, binary: str) -> None:
        self.binary = binary
        super().__init__(message)


class LinterNotInstalledError(VerifyToolMissingError):
    """The linter `run_lint` needs is not installed in the sandbox."""


class CoverageToolMissingError(VerifyToolMissingError):
    """`run_tests(coverage=True)`: the project has no coverage tool the sandbox can run
    (`binary` names it; the message says how to install it)."""


class VerifyToolFailedError(VerifyError, CommandError):
    """The tool itself failed (crashed, bad config, timed out) rather than reporting findings.

    Carries `command`, `exit_code` and the `stderr` tail, like every `CommandError`.
    """


class NoTestRunError(VerifyError):
    """`last_test_failures` / `run_failing_tests` found no earlier report to work from."""


# --- The git round trip (sandlot.git): a repository in, the agent's commits back. ---


class GitError(SandlotError):
    """A git round trip step failed; `stderr` holds the tail of what git printed."""

    def __init__(self, message: str, *, stderr: str = "") -> None:
        self.stderr = _tail(stderr)
        detail = f"\ngit said (tail):\n{self.stderr}" if self.stderr else ""
        super().__init__(message + detail)


class GitNotFoundError(GitError):
    """git is not installed where it is needed (the sandbox image or template, or the host)."""


class NotAGitRepositoryError(GitError, ConfigurationError):
    """The host path given as `repo` is not inside a git repository."""


class GitRefNotFoundError(GitError, ConfigurationError):
    """The ref to push in does not name a commit of the host repository."""


class InvalidBranchNameError(GitError, ConfigurationError):
    """A branch name git would refuse (or that could be read as an option)."""


class BranchExistsError(GitError):
    """`pull_out` would overwrite an existing host branch; pass force=True (`--force`) to
    allow it."""


class SandboxRepositoryError(GitError):
    """The repository in the sandbox is missing, or its base ref (refs/sandlot/base) is gone."""


class GitDestinationError(GitError, ConfigurationError):
    """`push_in` was pointed at a sandbox directory that already holds files."""


class SandboxGitOutputError(GitError):
    """The sandbox's git printed something that is not what pull_out asked for (a commit id
    that is not 40 or 64 hex digits, a size that is not a number): a hostile or broken git in
    the sandbox. Nothing of it reached the host's git; no host ref was written."""


class GitStepTimeoutError(GitError):
    """A step of the git round trip inside the sandbox (reading its repository, copying the
    bundle out) did not finish within its bound; the message names the step."""


class BundleTooLargeError(GitError):
    """The bundle of the sandbox's new commits is larger than pull_out's `max_bundle`."""


# --- The coder backend (sandlot.coder). Each is a subclass of the generic kind above, so code
# that only knows the generic kinds still catches them. ---


class CoderCLINotFoundError(ToolNotFoundError):
    """The `coder` CLI is not installed (or `coder_binary` points nowhere)."""


class CoderNotLoggedInError(ProviderError):
    """The `coder` CLI has no valid session: not logged in, or the token was rejected."""


class CoderUnreachableError(BackendUnavailableError):
    """The Coder deployment URL is malformed or the server cannot be reached."""


class CoderCLIError(ProviderError):
    """A `coder` command failed in a way no more specific error describes.

    `argv` is the command (never holding a secret: tokens travel in the environment),
    `exit_code` its status, `stderr` and `stdout` the tails of what it printed (stdout is
    where `coder create` / `start` stream the build log; it is not repeated in the message).
    """

    def __init__(
        self,
        message: str,
        *,
        argv: list[str] | None = None,
        exit_code: int | None = None,
        stderr: str = "",
        stdout: str = "",
        provider: str = "coder",
        sandbox: str = "",
    ) -> None:
        self.argv = [redact(a) for a in (argv or [])]
        self.exit_code = exit_code
        self.stderr = _tail(stderr)
        self.stdout = _tail(stdout)
        detail = f"\nstderr (tail):\n{self.stderr}" if self.stderr else ""
        super().__init__(f"{message}{detail}", provider=provider, sandbox=sandbox)


class CoderWorkspaceNotFoundError(CoderCLIError, SandboxStartError):
    """The workspace to attach to does not exist, or this user cannot see it."""


class CoderBuildFailedError(CoderCLIError, SandboxStartError):
    """A workspace build (create, start) failed.

    `job_error` holds the provisioner's one-line reason (often just "terraform apply: exit
    status 1"); `build_log` the tail of the build log the CLI streamed, where the provisioner
    says what went wrong (Terraform's `Error:` lines). Both are in the message too.
    """

    def __init__(
        self,
        message: str,
        *,
        job_error: str = "",
        build_log: str = "",
        argv: list[str] | None = None,
        exit_code: int | None = None,
        stderr: str = "",
        sandbox: str = "",
    ) -> None:
        self.job_error = redact(job_error)
        self.build_log = _tail(build_log, 3000)
        if self.build_log:
            message = f"{message}\nbuild log (tail):\n{self.build_log}"
        super().__init__(message, argv=argv, exit_code=exit_code, stderr=stderr, sandbox=sandbox)


class CoderAgentError(SandboxStartError):
    """The chosen workspace agent failed to start, is shutting down, or never became ready.

    `agent` is its name, `status` / `lifecycle_state` what `coder list` last reported.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str = "",
        status: str = "",
        lifecycle_state: str = "",
        provider: str = "coder",
        sandbox: str = "",
    ) -> None:
        self.agent = agent
        self.status = status
        self.lifecycle_state = lifecycle_state
        super().__init__(message, provider=provider, sandbox=sandbox)


class CoderAgentSelectionError(ConfigurationError):
    """The workspace has several agents and none (or an unknown one) was named.

    `available` lists the agent names the workspace has.
    """

    def __init__(self, message: str, *, available: list[str]) -> None:
        self.available = list(available)
        super().__init__(message)


# --- Durable processes (sandlot.processes). ---


class ProcessNotFoundError(SandlotError, LookupError):
    """No durable process with that id in the sandbox (never started there, or removed)."""


class ProcessStillRunningError(SandlotError):
    """The durable process is still running; end it first (`kill()`) or pass `force=True`."""


class ProcessStartError(SandlotError):
    """A durable process could not be started; nothing of it was left in the sandbox."""


class ProcessRecordError(SandlotError):
    """The sandbox printed a process record sandlot cannot read (its files were tampered with)."""


# --- Port forwards (Sandbox.forward_port). ---


class ForwardRelayMissingError(SandlotError):
    """The sandbox has no program the port relay can use (python3, socat, nc or busybox)."""


class PortForwardUnsupportedError(SandlotError):
    """This sandbox's commands cannot be reached over a network at all."""


# --- Work-tree snapshots (sandlot.snapshots). ---


class SnapshotError(SandlotError):
    """A snapshot could not be taken, listed, restored or compared; the message says why."""


class SnapshotToolsMissingError(SnapshotError):
    """The sandbox lacks a program snapshots need (git, find, ...): `missing` names them."""

    def __init__(self, message: str, *, missing: Iterable[str] = ()) -> None:
        self.missing = tuple(missing)
        super().__init__(message)


class SnapshotNotFoundError(SnapshotError, LookupError):
    """No snapshot with that id in this sandbox's store (never taken here, or the store was
    removed with the sandbox's .sandlot directory)."""


class ForeignSnapshotError(SnapshotError, ConfigurationError):
    """The snapshot was taken in another sandbox: restore it there, or fork from it."""


class SnapshotBusyError(SnapshotError):
    """A process still works in the tree a restore would rewrite: end it, or pass
    `force=True`. `holders` lists what was found (pid, why, command)."""

    def __init__(self, message: str, *, holders: Iterable[str] = ()) -> None:
        self.holders = tuple(holders)
        super().__init__(message)


class SnapshotDiskFullError(SnapshotError):
    """The sandbox's disk filled up while a snapshot was written; no snapshot was recorded."""


class SnapshotDiffTooLargeError(SnapshotError):
    """The patch is larger than the limit asked for: pass a larger `max_bytes`, or `paths`."""


# --- Fork (sandlot.fork). ---


class ForkError(SandlotError):
    """Forks could not be made; every fork already made was closed again."""


class ForkSourceClosedError(ForkError, SandboxClosed):
    """The sandbox to fork is closed (before or during the fork): fork an open one."""


class NotSupportedError(SandlotError):
    """This backend cannot do what was asked (pause a local sandbox, say); the message says
    which backend can."""


# --- Code navigation through language servers (sandlot.lsp). ---


class LanguageServerError(SandlotError):
    """A language server could not answer a navigation request (sandlot.lsp)."""


class LanguageServerNotInstalledError(LanguageServerError, VerifyToolMissingError):
    """The language server for a file's language is not on the sandbox's PATH (`binary`)."""


class LanguageServerCrashedError(LanguageServerError):
    """The language server stopped while a request was pending; the next call restarts it."""


class LanguageServerTimeoutError(LanguageServerError):
    """The language server did not finish indexing, or answering, within the time allowed."""


class LanguageServerRequestError(LanguageServerError):
    """The language server answered with an error (its JSON-RPC `code` is kept)."""

    def __init__(self, message: str, *, code: int = 0) -> None:
        self.code = code
        super().__init__(message)


class NoLanguageServerError(LanguageServerError, ConfigurationError):
    """No language's detector owns the file's extension (or no language is detected)."""
