"""The template tier (harness.py): one Terraform-provisioning Coder deployment per session.

Needs the real coder binary, terraform with both providers, the private Docker engine and the
workspace image, all made by setup; without them the tier skips locally and FAILS when CI=true.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.helpers import require

from .harness import IMAGE_SCRIPT, TemplateCoder, cached_rootfs, import_image, missing_parts


@pytest.fixture(scope="session")
def template_coder() -> Iterator[TemplateCoder]:
    """The session's deployment; stopped at the end, failing if a workspace was left on it."""
    missing = missing_parts()
    require(not missing, f"the template tier needs {', '.join(missing)}")
    rootfs = cached_rootfs()
    require(rootfs is not None, f"workspace image not built: run {IMAGE_SCRIPT}")
    assert rootfs is not None
    from tests.backends.docker import engine

    eng = engine()
    image, import_seconds = import_image(eng, rootfs)
    coder = TemplateCoder(eng, image)
    coder.timings["image_import"] = import_seconds
    coder.start()
    try:
        yield coder
    finally:
        workspaces = [ws["name"] for ws in coder.list_workspaces()]
        for name in workspaces:  # still clean up, then fail: a leak is a defect
            coder.coder("delete", name, "--yes", timeout=300)
        coder.stop()
        # What the tier cost, for adr/0045 and the README (pytest -s shows it).
        print(f"\ntemplate tier timings: {coder.timings}")
        assert not workspaces, f"workspaces left on the template deployment: {workspaces}"
