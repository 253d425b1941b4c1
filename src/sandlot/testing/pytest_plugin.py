"""pytest fixtures for testing your own code against sandlot's backends.

Installing sandlot registers this module as a pytest plugin (the ``pytest11`` entry point
``sandlot``), so any test suite in an environment with sandlot gets these fixtures without a
``conftest.py`` line; ``-p no:sandlot`` turns it off. Nothing here runs until a test asks for
a fixture.

- ``sandlot_fake_coder`` (session): a `FakeCoderDeployment` (see `sandlot.testing`) with its
  `coder` executable installed and one template, ``sandlot`` (`SANDLOT_TEMPLATE`), whose one
  agent is ``main``; add more with ``sandlot_fake_coder.add_template(...)``. Every agent is
  killed at the end of the session.
- ``sandlot_coder_provider`` (function): ``sandlot.coder(template="sandlot",
  on_close="delete", **sandlot_fake_coder.access())``: each ``session()`` is a new workspace
  of the fake deployment, deleted when the session ends.
- ``sandlot_local_provider`` (function): ``sandlot.local()``, a temporary directory per
  sandbox.

The providers are async (``async with provider.session() as sandbox``): run such tests with
anyio's pytest plugin (``@pytest.mark.anyio``; sandlot needs its asyncio backend, anyio's
default) or any other async test runner.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

# The fake deployment and the backends are imported by the fixtures that use them, not when
# pytest loads the plugin; these imports are for the annotations only.
if TYPE_CHECKING:
    from sandlot.backends.coder.provider import CoderProvider
    from sandlot.backends.local import LocalProvider

    from .deployment import FakeCoderDeployment

#: The template the session's fake deployment offers (one agent, ``main``).
SANDLOT_TEMPLATE = "sandlot"


@pytest.fixture(scope="session")
def sandlot_fake_coder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeCoderDeployment]:
    """A fake Coder deployment for the whole session, its `coder` installed."""
    from .deployment import AgentSpec, FakeCoderDeployment

    root = tmp_path_factory.mktemp("sandlot-fake-coder")
    with FakeCoderDeployment(root / "deployment") as deployment:
        deployment.add_template(SANDLOT_TEMPLATE, agents=[AgentSpec("main", directory="project")])
        deployment.install(root / "bin")
        yield deployment


@pytest.fixture
def sandlot_coder_provider(sandlot_fake_coder: FakeCoderDeployment) -> CoderProvider:
    """A `sandlot.coder` provider whose sandboxes are new workspaces of the fake deployment."""
    import sandlot

    return sandlot.coder(
        template=SANDLOT_TEMPLATE, on_close="delete", **sandlot_fake_coder.access()
    )


@pytest.fixture
def sandlot_local_provider() -> LocalProvider:
    """A `sandlot.local` provider (a temporary directory per sandbox, deleted on close)."""
    import sandlot

    return sandlot.local()
