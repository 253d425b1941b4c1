"""The docker client as sandlot drives it: one resolved binary, one engine address, typed errors.

Every call names its engine explicitly (`--host` or `--context`) when the options give one, and
the client's configuration directory is pinned, so a command's own environment (HOME, DOCKER_*)
can never redirect the client to another engine.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import (
    BackendUnavailableError,
    ImageNotFoundError,
    ProviderError,
    SandboxGoneError,
    SandboxPausedError,
    ToolNotFoundError,
)

if TYPE_CHECKING:
    from .options import DockerOptions

PROVIDER = "docker"

#: Client stderr that means the engine cannot be reached at all.
_UNREACHABLE = (
    "cannot connect to the docker daemon",
    "error during connect",
    "is the docker daemon running",
    "permission denied while trying to connect",
    "connection refused",
    "context not found",
    "failed to connect",
)
#: Client stderr that means the container is not there (any more) or not running.
_GONE = ("no such container", "is not running", "no such object")
_PAUSED = ("is paused",)
_NO_IMAGE = ("no such image", "unable to find image", "pull access denied", "not found: manifest")


@dataclass(frozen=True)
class Completed:
    """A finished docker client call."""

    code: int
    stdout: str
    stderr: str


def _pinned_config() -> str:
    return os.environ.get("DOCKER_CONFIG") or str(Path.home() / ".docker")


class DockerCLI:
    """The docker client with the engine address of one provider."""

    def __init__(
        self,
        docker_binary: str = "docker",
        *,
        docker_host: str | None = None,
        context: str | None = None,
    ) -> None:
        found = shutil.which(docker_binary)
        if found is None:
            raise ToolNotFoundError(
                f"the docker client {docker_binary!r} was not found on PATH; install "
                "it (Debian/Ubuntu: apt-get install docker.io, or Docker's docker-ce-cli) or "
                "set docker_binary to its path",
                provider=PROVIDER,
            )
        self.binary = found
        self.docker_host = docker_host
        self.context = context
        self.base: list[str] = [found]
        if docker_host:
            self.base += ["--host", docker_host]
        elif context:
            self.base += ["--context", context]
        env = dict(os.environ)
        env["DOCKER_CONFIG"] = _pinned_config()
        self.env = env

    @classmethod
    def from_options(cls, options: DockerOptions) -> DockerCLI:
        return cls(options.docker_binary, docker_host=options.docker_host, context=options.context)

    @property
    def target(self) -> str:
        """The engine this client talks to, in words for error messages."""
        if self.docker_host:
            return f"engine at {self.docker_host}"
        if self.context:
            return f"engine of docker context {self.context!r}"
        if os.environ.get("DOCKER_HOST"):
            return f"engine at DOCKER_HOST={os.environ['DOCKER_HOST']}"
        if os.environ.get("DOCKER_CONTEXT"):
            return f"engine of docker context {os.environ['DOCKER_CONTEXT']!r} (DOCKER_CONTEXT)"
        return "default engine (unix:///var/run/docker.sock unless a docker context says otherwise)"

    def argv(self, *args: str) -> list[str]:
        return [*self.base, *args]

    async def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        timeout: float | None = 120,
        env: dict[str, str] | None = None,
    ) -> Completed:
        """Run one client command to completion and capture its output."""
        try:
            proc = await asyncio.create_subprocess_exec(
                *self.argv(*args),
                stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**self.env, **(env or {})},
            )
        except FileNotFoundError as exc:  # removed since it was resolved
            raise ToolNotFoundError(
                f"the docker client {self.binary!r} disappeared: {exc}", provider=PROVIDER
            ) from exc
        try:
            out, err = await asyncio.wait_for(proc.communicate(stdin), timeout)
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
        assert proc.returncode is not None
        return Completed(proc.returncode, out.decode(errors="replace"),
                         err.decode(errors="replace"))

    def error(
        self, stderr: str, *, what: str, container: str = "", fallback: type[ProviderError]
    ) -> ProviderError:
        """The typed error a failed client call stands for."""
        text = stderr.strip() or "no error output"
        low = text.lower()
        if any(p in low for p in _UNREACHABLE):
            return BackendUnavailableError(
                f"{what}: cannot reach the Docker {self.target}: {text.rstrip('.')}. Start the "
                "engine (or fix docker_host / context) and retry",
                provider=PROVIDER, sandbox=container,
            )  # fmt: skip
        if container and any(p in low for p in _PAUSED):
            return SandboxPausedError(
                f"{what}: container {container!r} is paused: {text}. Unpause it (docker "
                "unpause) and retry",
                provider=PROVIDER, sandbox=container,
            )  # fmt: skip
        if container and any(p in low for p in _GONE):
            return SandboxGoneError(
                f"{what}: container {container!r} is gone or no longer running (removed, "
                f"stopped or killed from outside): {text}. Create a new sandbox",
                provider=PROVIDER, sandbox=container,
            )  # fmt: skip
        if any(p in low for p in _NO_IMAGE):
            return ImageNotFoundError(f"{what}: {text}", provider=PROVIDER, sandbox=container)
        return fallback(f"{what}: {text}", provider=PROVIDER, sandbox=container)

    async def check(
        self,
        *args: str,
        what: str,
        container: str = "",
        fallback: type[ProviderError] = ProviderError,
        timeout: float | None = 120,
    ) -> Completed:
        """Run a client command and raise its typed error when it fails."""
        done = await self.run(*args, timeout=timeout)
        if done.code != 0:
            raise self.error(done.stderr, what=what, container=container, fallback=fallback)
        return done

    def is_gone(self, stderr: str) -> bool:
        low = stderr.lower()
        return any(p in low for p in _GONE)

    def is_unreachable(self, stderr: str) -> bool:
        low = stderr.lower()
        return any(p in low for p in _UNREACHABLE)
