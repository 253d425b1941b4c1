"""sandlot: isolated places to run code -- Coder workspaces, Docker containers, local
directories -- behind one async interface.

    import sandlot

    async with sandlot.local().session() as sandbox:
        result = await sandbox.exec("echo hello", on_stdout=print)

Blocking scripts use `sandlot.sync.session(provider)` instead.
"""

from .backends.coder import CoderAttachOptions, CoderCreateOptions, coder
from .backends.docker import DockerMount, DockerOptions, DockerProvider, docker
from .backends.local import LocalOptions, LocalProvider, local
from .config import ProviderConfig, parse_config, provider_from_config, provider_from_env
from .errors import (
    BackendUnavailableError,
    CleanupError,
    CoderAgentError,
    CoderAgentSelectionError,
    CoderBuildFailedError,
    CoderCLIError,
    CoderCLINotFoundError,
    CoderNotLoggedInError,
    CoderUnreachableError,
    CoderWorkspaceNotFoundError,
    CommandError,
    CommandFailed,
    CommandTimedOut,
    ConfigurationError,
    ConnectionLostError,
    HostPathNotFoundError,
    ImageNotFoundError,
    InvalidEnvError,
    InvalidPathError,
    ProviderError,
    RequirementsInstallError,
    RuntimeNotFoundError,
    SandboxClosed,
    SandboxGoneError,
    SandboxStartError,
    SandlotError,
    ToolNotFoundError,
    TransferError,
    UnknownModeError,
)
from .provider import IsolatedSandboxProvider
from .sandbox import ExecResult, Process, Sandbox

__all__ = [
    "BackendUnavailableError",
    "CleanupError",
    "CoderAgentError",
    "CoderAgentSelectionError",
    "CoderAttachOptions",
    "CoderBuildFailedError",
    "CoderCLIError",
    "CoderCLINotFoundError",
    "CoderCreateOptions",
    "CoderNotLoggedInError",
    "CoderUnreachableError",
    "CoderWorkspaceNotFoundError",
    "CommandError",
    "CommandFailed",
    "CommandTimedOut",
    "ConfigurationError",
    "ConnectionLostError",
    "DockerMount",
    "DockerOptions",
    "DockerProvider",
    "ExecResult",
    "HostPathNotFoundError",
    "ImageNotFoundError",
    "InvalidEnvError",
    "InvalidPathError",
    "IsolatedSandboxProvider",
    "LocalOptions",
    "LocalProvider",
    "Process",
    "ProviderConfig",
    "ProviderError",
    "RequirementsInstallError",
    "RuntimeNotFoundError",
    "Sandbox",
    "SandboxClosed",
    "SandboxGoneError",
    "SandboxStartError",
    "SandlotError",
    "ToolNotFoundError",
    "TransferError",
    "UnknownModeError",
    "coder",
    "docker",
    "local",
    "parse_config",
    "provider_from_config",
    "provider_from_env",
]
