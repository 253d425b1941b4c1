"""Which backends can run here, and how: discovery gives a `Target` or a plain skip reason.

* local: always (the embedded default).
* docker: when `sandlot.docker` is in this build, a `docker` client is on PATH, an engine
  answers (`--docker-host`, else $DOCKER_HOST, else the client's default), and an image is
  given (`--docker-image` or $SANDLOT_DOGFOOD_DOCKER_IMAGE) that the engine has.
* coder: see dogfood.coder_target.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import sys
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from sandlot import IsolatedSandboxProvider, Sandbox, SandboxClosed

from .context import Context, expect

DOCKER_IMAGE_ENV = "SANDLOT_DOGFOOD_DOCKER_IMAGE"
DOCKER_OPTIONS_ENV = "SANDLOT_DOGFOOD_DOCKER_OPTIONS"
TOOLS_PATH_ENV = "SANDLOT_DOGFOOD_TOOLS_PATH"
#: Where scripts/setup.d/40-verify-tools.sh puts golangci-lint, ruff, mypy and pytest.
VERIFY_TOOLS_ENV = "SANDLOT_VERIFY_TOOLS"
VERIFY_TOOLS_DEFAULT = "/opt/sandlot/verify-tools"

Step = Callable[[Context], Awaitable[None]]


@dataclass
class Skip:
    """A backend that cannot run here, and why (in words that say what to do)."""

    name: str
    reason: str


@dataclass
class Settings:
    """The command-line choices discovery needs."""

    docker_image: str | None = None
    docker_host: str | None = None
    docker_options: dict[str, Any] = field(default_factory=dict)
    fake_coder: bool = False
    coder_template: str | None = None
    coder_preset: str | None = None
    coder_parameters: dict[str, str] = field(default_factory=dict)
    coder_agent: str | None = None
    tools_path: list[str] = field(default_factory=list)
    scratch: Path = Path("/tmp")


class Target(ABC):
    """A backend that runs: makes the main provider, checks close, adds its own scenarios."""

    name: str
    #: Whether `aclose` does something worth a `cleanup` scenario of its own.
    needs_cleanup = False

    def __init__(self) -> None:
        self.details: dict[str, Any] = {}

    @abstractmethod
    def describe(self) -> str:
        """How it is reached, for the progress line."""

    @abstractmethod
    def provider(self) -> IsolatedSandboxProvider:
        """The provider of the sandbox the common scenarios share."""

    @property
    def close_scenario(self) -> str:
        return "close"

    async def check_closed(self, ctx: Context, sandbox: Sandbox) -> None:
        """After `close()`: every call raises SandboxClosed; backends add what must be gone."""
        try:
            await sandbox.exec("true")
        except SandboxClosed:
            pass
        else:
            raise AssertionError("exec after close() did not raise SandboxClosed")

    def extra_scenarios(self) -> dict[str, Step]:
        """Backend-specific scenarios that run after `close` (each makes its own sandboxes)."""
        return {}

    async def aclose(self) -> None:  # noqa: B027 (a no-op by default, on purpose)
        """Tear down what discovery set up (a fake deployment); called once at the end."""


def tool_dirs(settings: Settings) -> list[str]:
    """Host directories put first on PATH in host-process sandboxes (local, fake coder).

    `--tools-path` / $SANDLOT_DOGFOOD_TOOLS_PATH when given; else the verify tools directory
    (scripts/setup.d/40-verify-tools.sh) and this interpreter's bin directory (the project's
    .venv, with pytest, ruff and mypy), so the verify scenario finds the tools without a global
    install.
    """
    if settings.tools_path:
        return [p for p in settings.tools_path if p]
    dirs = []
    verify_bin = Path(os.environ.get(VERIFY_TOOLS_ENV, VERIFY_TOOLS_DEFAULT)) / "bin"
    if verify_bin.is_dir():
        dirs.append(str(verify_bin))
    dirs.append(str(Path(sys.executable).parent))
    return dirs


def host_env(settings: Settings) -> dict[str, str]:
    return {"PATH": os.pathsep.join([*tool_dirs(settings), os.environ.get("PATH", "")])}


class LocalTarget(Target):
    name = "local"

    def __init__(self, settings: Settings) -> None:
        super().__init__()
        self.env = host_env(settings)
        self.details = {"tools_path": tool_dirs(settings)}

    def describe(self) -> str:
        return "a temp directory on this machine"

    def provider(self) -> IsolatedSandboxProvider:
        import sandlot

        return sandlot.local(on_close="delete", env=self.env)

    async def check_closed(self, ctx: Context, sandbox: Sandbox) -> None:
        await super().check_closed(ctx, sandbox)
        expect(
            not Path(sandbox.worktree).exists(),
            f"the worktree {sandbox.worktree} is still there after close (on_close=delete)",
        )
        ctx.summary("worktree removed; calls raise SandboxClosed")


class DockerTarget(Target):
    name = "docker"

    def __init__(self, settings: Settings, image: str, client: DockerClient) -> None:
        super().__init__()
        self.image = image
        self.client = client
        self.options = dict(settings.docker_options)
        self.details = {"image": image, "engine": client.where, **client.versions}

    def describe(self) -> str:
        return f"image {self.image} on the {self.client.where}"

    def provider(self) -> IsolatedSandboxProvider:
        # Imported by name: this module must load even in a build without the docker backend.
        backend = importlib.import_module("sandlot.backends.docker")
        options = {"on_close": "delete", **self.options}
        if self.client.host:
            options.setdefault("docker_host", self.client.host)
        provider: IsolatedSandboxProvider = backend.docker(self.image, **options)
        return provider

    async def check_closed(self, ctx: Context, sandbox: Sandbox) -> None:
        await super().check_closed(ctx, sandbox)
        container = getattr(sandbox, "container_id", None) or sandbox.name
        code, out, err = await self.client.run(
            "ps", "-a", "-q", "--no-trunc", "--filter", f"id={container}"
        )
        expect(code == 0, f"docker ps failed: {err.strip()}")
        expect(not out.strip(), f"container {container} still exists after close (delete)")
        ctx.details["container"] = container
        ctx.summary(f"container {container[:12]} removed; calls raise SandboxClosed")


class DockerClient:
    """The `docker` client aimed at one engine (for discovery and the close check)."""

    def __init__(self, binary: str, host: str | None) -> None:
        self.binary = binary
        self.host = host
        self.versions: dict[str, str] = {}

    @property
    def where(self) -> str:
        if self.host:
            return f"engine at {self.host}"
        return "docker client's default engine"

    async def run(self, *args: str, timeout: float = 60) -> tuple[int, str, str]:
        argv = [self.binary, *(["--host", self.host] if self.host else []), *args]
        with anyio.fail_after(timeout):
            done = await anyio.run_process(argv, check=False)
        return done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(
            errors="replace"
        )


def _first_line(text: str) -> str:
    for line in text.splitlines():
        if line.strip():
            return line.strip()
    return ""


async def discover_docker(settings: Settings) -> DockerTarget | Skip:
    try:
        importlib.import_module("sandlot.backends.docker")
    except ImportError:
        return Skip("docker", "the docker backend (sandlot.backends.docker) is not in this build")
    binary = shutil.which("docker")
    if binary is None:
        return Skip("docker", "the docker client is not on PATH (install docker's CLI)")
    host = settings.docker_host or os.environ.get("DOCKER_HOST") or None
    client = DockerClient(binary, host)
    try:
        code, out, err = await client.run("version", "--format", "{{json .}}", timeout=20)
    except TimeoutError:
        return Skip("docker", f"no Docker engine answered at the {client.where} within 20s")
    if code != 0:
        why = _first_line(err) or f"docker version exited {code}"
        return Skip(
            "docker",
            f"no Docker engine answered at the {client.where}: {why} (start one, or point "
            "--docker-host / DOCKER_HOST at its socket)",
        )
    try:
        info = json.loads(out)
        client.versions = {
            "docker_client": info.get("Client", {}).get("Version", ""),
            "docker_engine": info.get("Server", {}).get("Version", ""),
        }
    except (ValueError, AttributeError):
        pass
    image = settings.docker_image or os.environ.get(DOCKER_IMAGE_ENV)
    if not image:
        return Skip(
            "docker",
            f"an engine answers at the {client.where}, but no image was given: pass "
            f"--docker-image IMAGE or set {DOCKER_IMAGE_ENV} (an image the engine already has; "
            "providers/docker/ has a recipe)",
        )
    code, _, err = await client.run("image", "inspect", "--format", "{{.Id}}", image)
    if code != 0:
        return Skip(
            "docker",
            f"image {image!r} is not in the engine's local store at the {client.where} "
            f"({_first_line(err)}); build or load it first (dogfood never pulls)",
        )
    return DockerTarget(settings, image, client)


def merge_options(raw: str | None, environ: Mapping[str, str]) -> dict[str, Any]:
    """Extra DockerOptions fields from --docker-options or $SANDLOT_DOGFOOD_DOCKER_OPTIONS."""
    text = raw if raw is not None else environ.get(DOCKER_OPTIONS_ENV, "")
    if not text.strip():
        return {}
    value = json.loads(text)
    if not isinstance(value, dict):
        raise ValueError("docker options must be a JSON object of DockerOptions fields")
    return value
