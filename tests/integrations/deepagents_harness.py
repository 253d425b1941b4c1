"""A Deep Agents backend per contract-suite backend (tests/backends), for the integration tests.

The backend's provider (an engine, a fake or real Coder deployment) is set up on the event
loop of a blocking portal, the same loop the Deep Agents provider then runs every call on.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import ModuleType

import pytest
from anyio.from_thread import start_blocking_portal

from sandlot import IsolatedSandboxProvider
from tests import backends
from tests.helpers import in_ci

_PACKAGES = ("deepagents", "langchain_tests")


def require_packages() -> None:
    """Skip the module when the optional packages are missing; in CI that is a failure."""
    missing = [name for name in _PACKAGES if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = f"{', '.join(missing)} not installed: pip install -e '.[dev]'"
    if in_ci():
        raise ImportError(f"required component missing in CI: {reason}")
    pytest.skip(reason, allow_module_level=True)


@asynccontextmanager
async def _toolchain(module: ModuleType) -> AsyncIterator[IsolatedSandboxProvider]:
    yield module.toolchain_provider()


@contextmanager
def deepagents_backend(name: str, *, toolchain: bool = False) -> Iterator[object]:
    """One sandbox of backend `name` as a Deep Agents backend; closed afterwards.

    `toolchain=True` takes the backend's toolchain sandboxes where it has them (python on
    PATH: Deep Agents sandboxes are assumed to have it, and LangChain's suite runs `python -c`;
    the docker tier's default image is a bare busybox)."""
    from sandlot.integrations.deepagents import SandlotProvider

    module = backends.load(name)
    made_by = (_toolchain(module) if toolchain and hasattr(module, "toolchain_provider")
               else module.provider())
    with (start_blocking_portal("asyncio") as portal,
          portal.wrap_async_context_manager(made_by) as provider,
          SandlotProvider(provider, portal=portal) as made):
        yield made.get_or_create()
