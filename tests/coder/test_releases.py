"""Options that only some coder releases have, on the fake set to emulate each release.

The pinned release (v2.27.0) does not know `coder create --use-parameter-defaults`
(tests/fixtures/coder-cli/create-unknown-flag.json); the fake rejects it the same way unless
`set_use_parameter_defaults(True)` emulates a newer release.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandlot import CoderCLIError

from .deployment import PARAMS, ArgvRecorder, FakeDeployment

pytestmark = pytest.mark.anyio


async def test_use_parameter_defaults_on_the_pinned_release_says_to_upgrade(
    fake: FakeDeployment,
) -> None:
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
    fake.fake.set_use_parameter_defaults(True)
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
