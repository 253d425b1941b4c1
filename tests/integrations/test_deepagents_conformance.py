"""LangChain's own conformance suite for Deep Agents sandboxes (`langchain-tests`'
`SandboxIntegrationTests`), unmodified, once per sandlot backend.

Only its two hooks are filled in: the `sandbox` fixture, and `sandbox_root_dir`, which puts the
suite's files under the backend's root (the sandbox's worktree: the backend refuses paths
outside it, see adr/0041) instead of the suite's default /tmp.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests import backends
from tests.integrations.deepagents_harness import deepagents_backend, require_packages

require_packages()

from langchain_tests.integration_tests import SandboxIntegrationTests  # noqa: E402

# The suite's async tests run on the project's anyio runner (asyncio, tests/conftest.py). Each
# class holds one sandbox for its tests (a class-scoped fixture), so under xdist a class stays
# on one worker; docker and the real Coder share the groups of their session resources.
pytestmark = pytest.mark.anyio


def _selected(name: str) -> pytest.MarkDecorator:
    """Run only for the backends SANDLOT_TEST_BACKENDS selects, as the contract suite does."""
    return pytest.mark.skipif(name not in backends.selected(),
                              reason=f"{name} not in SANDLOT_TEST_BACKENDS")


class _OnBackend(SandboxIntegrationTests):
    BACKEND = ""
    _root = ""

    @pytest.fixture(scope="class")
    def sandbox(self) -> Iterator[object]:
        with deepagents_backend(self.BACKEND, toolchain=True) as backend:
            type(self)._root = backend.root  # type: ignore[attr-defined]
            yield backend

    @property
    def sandbox_root_dir(self) -> str:
        return f"{type(self)._root.rstrip('/')}/test_sandbox_ops/"


@pytest.mark.xdist_group("deepagents-local")
@_selected("local")
class TestLocal(_OnBackend):
    BACKEND = "local"


@pytest.mark.xdist_group("deepagents-local-bwrap")
@_selected("local-bwrap")
class TestLocalBwrap(_OnBackend):
    BACKEND = "local-bwrap"


@pytest.mark.xdist_group("docker")
@_selected("docker")
class TestDocker(_OnBackend):
    BACKEND = "docker"


@pytest.mark.xdist_group("deepagents-coder")
@_selected("coder")
class TestCoder(_OnBackend):
    BACKEND = "coder"


@pytest.mark.xdist_group("real-coder")
@_selected("coder-real")
class TestCoderReal(_OnBackend):
    BACKEND = "coder-real"
