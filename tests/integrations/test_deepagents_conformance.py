"""LangChain's own conformance suite for Deep Agents sandboxes (`langchain-tests`'
`SandboxIntegrationTests`), unmodified, once per sandlot backend.

Only its two hooks are filled in: the `sandbox` fixture, and `sandbox_root_dir`, which puts the
suite's files under the backend's root (the sandbox's worktree: the backend refuses paths
outside it, see adr/0041) instead of the suite's default /tmp.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integrations.deepagents_harness import deepagents_backend, require_packages

require_packages()

from langchain_tests.integration_tests import SandboxIntegrationTests  # noqa: E402

# The suite's async tests run on the project's anyio runner (asyncio, tests/conftest.py).
pytestmark = pytest.mark.anyio


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


class TestLocal(_OnBackend):
    BACKEND = "local"


class TestLocalBwrap(_OnBackend):
    BACKEND = "local-bwrap"


class TestDocker(_OnBackend):
    BACKEND = "docker"


class TestCoder(_OnBackend):
    BACKEND = "coder"


class TestCoderReal(_OnBackend):
    BACKEND = "coder-real"
