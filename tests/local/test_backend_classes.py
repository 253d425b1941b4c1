"""Bubblewrap is a backend class of its own beside the plain local one (adr/0039): the
factory picks the class, and no hook of the shared base branches on the isolation."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

import sandlot
from sandlot.backends import local, local_host
from sandlot.backends.local import LocalSandbox
from sandlot.backends.local_bwrap import BwrapSandbox
from sandlot.backends.local_host import HostSandbox
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio


async def test_the_isolation_picks_the_backend_class(tmp_path: Path) -> None:
    require_binary("bwrap", "apt-get install bubblewrap")
    async with sandlot.local(root=str(tmp_path)).session() as plain:
        assert type(plain) is LocalSandbox
        assert (await plain.exec("echo plain")).stdout == "plain\n"
    async with sandlot.local(root=str(tmp_path), isolation="bwrap").session() as boxed:
        assert type(boxed) is BwrapSandbox
        assert isinstance(boxed, HostSandbox) and not isinstance(boxed, LocalSandbox)
        # Under bubblewrap /tmp is private: the host's file is not there.
        marker = Path("/tmp") / f"sandlot-class-{tmp_path.name}"
        marker.write_text("host")
        try:
            seen = await boxed.exec(["cat", str(marker)])
        finally:
            marker.unlink()
        assert seen.exit_code != 0


def test_no_hook_of_the_plain_or_shared_backend_knows_bubblewrap() -> None:
    for module in (local, local_host):
        for cls in (LocalSandbox, HostSandbox):
            if cls.__module__ != module.__name__:
                continue
            assert "_bwrap" not in inspect.getsource(cls), cls.__qualname__
