"""Options that only some coder releases have, on the fake set to emulate each release.

The oldest supported release (v2.27.0) does not know `coder create --use-parameter-defaults`
(tests/fixtures/coder-cli/older/v2.27.0/create-unknown-flag.json); the fake follows the newest
(v2.30.0), which has it, and rejects it the same way after `set_release("v2.27.0")`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandlot import CoderCLIError

from .deployment import PARAMS, ArgvRecorder, FakeDeployment

pytestmark = pytest.mark.anyio


async def test_use_parameter_defaults_on_the_oldest_release_says_to_upgrade(
    fake: FakeDeployment,
) -> None:
    fake.fake.set_release("v2.27.0")
    provider = fake.provider(
        template=fake.template(PARAMS), preset="none", use_parameter_defaults=True,
        workspace_name="old-cli", on_close="delete",
    )  # fmt: skip
    with pytest.raises(
        CoderCLIError, match=r"does not know the flag --use-parameter-defaults.*upgrade"
    ):
        await provider.create()
    assert fake.find("old-cli") is None


async def test_use_parameter_defaults_on_a_release_that_has_it(
    fake: FakeDeployment, tmp_path: Path
) -> None:
    recorder = ArgvRecorder(fake.binary, tmp_path)
    provider = fake.provider(
        template=fake.template(PARAMS), preset="none", use_parameter_defaults=True,
        workspace_name="new-cli", on_close="delete", coder_binary=str(recorder.path),
    )  # fmt: skip
    async with provider.session():
        assert fake.find("new-cli") is not None
    [create] = [c for c in recorder.calls() if c[0] == "create"]
    assert create == [
        "create", "new-cli", "--template", fake.template(PARAMS), "--preset", "none",
        "--use-parameter-defaults", "--yes",
    ]  # fmt: skip
    assert fake.find("new-cli") is None
