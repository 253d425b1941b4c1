"""What the language-server tests share: where the servers are, the backends they run on
(each lends the sandbox the servers and toolchains the same way the verify tests lend their
tools), and the fixture projects.

Servers come from scripts/setup.d/50-language-servers.sh, all in $SANDLOT_LANGUAGE_SERVERS/bin,
which goes first on the sandbox's PATH: locally and on (fake or real) Coder, whose agents run
on this machine, as it is; on docker, mounted read-only at the same path, as the verify tools
are. Select backends with SANDLOT_TEST_BACKENDS (those of local, docker, coder, coder-real).
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path

import sandlot
from tests import backends
from tests.helpers import require
from tests.verify.support import TOOLS

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "lsp"
SERVERS = Path(os.environ.get("SANDLOT_LANGUAGE_SERVERS", "/opt/sandlot/language-servers"))

#: language -> the server binary setup installs for it.
BINARIES = {"go": "gopls", "python": "pyright-langserver", "node": "typescript-language-server",
            "rust": "rust-analyzer"}


def require_servers(*languages: str) -> None:
    missing = [BINARIES[lang] for lang in languages
               if not (SERVERS / "bin" / BINARIES[lang]).exists()]
    require(not missing, f"language servers missing in {SERVERS}/bin: {', '.join(missing)}; run "
            "scripts/setup.d/50-language-servers.sh")


def path_for(base: str) -> str:
    """PATH with the servers, then the verify tools (mypy, pytest), then `base`."""
    return f"{SERVERS / 'bin'}:{TOOLS / 'bin'}:{base}"


Backend = tuple[sandlot.IsolatedSandboxProvider, dict[str, str]]


@asynccontextmanager
async def _local() -> AsyncIterator[Backend]:
    env = {"PATH": path_for(os.environ.get("PATH", "")), "NO_COLOR": "1"}
    yield sandlot.local(env=env), env


@asynccontextmanager
async def _docker() -> AsyncIterator[Backend]:
    from tests.backends import docker as docker_backend
    from tests.verify.backends import _go_cache

    require(docker_backend.HAS_TOOLCHAINS, "host toolchains for the docker toolchain image")
    base = docker_backend.TOOLCHAIN_ENV
    env = {
        **base,
        "PATH": path_for(base["PATH"]),
        "GOCACHE": "/gocache",
        "GOFLAGS": "-buildvcs=false",
        "npm_config_cache": "/tmp/npm-cache",
        "npm_config_update_notifier": "false",
        "NO_COLOR": "1",
    }
    mounts = [
        {"source": str(SERVERS), "target": str(SERVERS), "read_only": True},
        {"source": str(TOOLS), "target": str(TOOLS), "read_only": True},
        # The host's Go build cache: a fresh container would rebuild the standard library.
        {"source": _go_cache(), "target": "/gocache", "read_only": False},
    ]
    yield docker_backend.toolchain_provider(env=env, mounts=mounts, init=False), env


def _coder(module: str) -> Callable[[], AbstractAsyncContextManager[Backend]]:
    @asynccontextmanager
    async def made() -> AsyncIterator[Backend]:
        # The agents run on this machine: the host's toolchains and servers are theirs. Their
        # environment has no HOME of this user, so rustup (cargo, for rust-analyzer) is told.
        home = os.path.expanduser("~")
        env = {"PATH": path_for(os.environ.get("PATH", "")), "NO_COLOR": "1",
               "RUSTUP_HOME": os.environ.get("RUSTUP_HOME", f"{home}/.rustup"),
               "CARGO_HOME": os.environ.get("CARGO_HOME", f"{home}/.cargo")}
        async with backends.load(module).provider() as provider:
            yield provider, env

    return made


REGISTRY: dict[str, Callable[[], AbstractAsyncContextManager[Backend]]] = {
    "local": _local,
    "docker": _docker,
    "coder": _coder("coder"),
    "coder-real": _coder("coder-real"),
}


def selected() -> list[str]:
    return [name for name in backends.selected() if name in REGISTRY]


class Providers:
    """Each backend's provider, made on first use and kept for the session."""

    def __init__(self) -> None:
        self.stack = AsyncExitStack()
        self.made: dict[str, Backend] = {}

    async def get(self, name: str) -> Backend:
        if name not in self.made:
            self.made[name] = await self.stack.enter_async_context(REGISTRY[name]())
        return self.made[name]
