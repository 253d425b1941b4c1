"""Fixtures of the language-server tests: one provider per backend for the session, and per
(backend, language) ONE sandbox holding the fixture project with ONE warmed server, shared by
every test of the module (servers are heavy: the default run starts few)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

import sandlot
from sandlot.lsp import LanguageServers

from .cases import CASES, Case
from .support import FIXTURES, Providers, require_servers, selected


@pytest.fixture(scope="session")
async def lsp_providers() -> AsyncIterator[Providers]:
    made = Providers()
    try:
        yield made
    finally:
        await made.stack.aclose()


@dataclass
class Project:
    case: Case
    backend: str
    sandbox: sandlot.Sandbox
    lsp: LanguageServers
    env: dict[str, str]
    progress: list[str]


def project_params() -> list[tuple[str, str]]:
    """(backend, language): every language on each backend, and Go alone on real Coder."""
    return [(backend, language) for backend in selected() for language in CASES
            if backend != "coder-real" or language == "go"]


@pytest.fixture(scope="module", params=project_params(), ids=lambda p: f"{p[0]}-{p[1]}")
async def project(request: pytest.FixtureRequest,
                  lsp_providers: Providers) -> AsyncIterator[Project]:
    backend, language = request.param
    case = CASES[language]
    require_servers(language)
    provider, env = await lsp_providers.get(backend)
    async with provider.session() as sandbox:
        await sandbox.copy_in(FIXTURES / case.fixture, sandbox.worktree)
        progress: list[str] = []
        async with LanguageServers(sandbox, env=env, on_progress=progress.append) as lsp:
            yield Project(case, backend, sandbox, lsp, env, progress)
