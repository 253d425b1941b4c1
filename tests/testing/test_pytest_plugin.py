"""sandlot.testing.pytest_plugin: a user's own test suite gets the fixtures from the installed
package's pytest11 entry point, with no conftest line (issue 26.9)."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = '''
import pytest


@pytest.mark.anyio
async def test_exec_on_a_fake_coder_workspace(sandlot_coder_provider, sandlot_fake_coder):
    async with sandlot_coder_provider.session() as sandbox:
        result = await sandbox.exec("echo hello from $(hostname)", check=True)
        assert result.stdout.startswith("hello from ")
        names = [f"{ws['owner_name']}/{ws['name']}" for ws in sandlot_fake_coder.workspaces()]
        assert names == [sandbox.name]                   # owner/name
    assert sandlot_fake_coder.workspaces() == []          # on_close="delete"


@pytest.mark.anyio
async def test_a_second_workspace_of_the_same_deployment(sandlot_coder_provider):
    async with sandlot_coder_provider.session() as sandbox:
        await sandbox.copy_in(__file__, f"{sandbox.worktree}/copied.py")
        assert (await sandbox.exec("test -s copied.py")).exit_code == 0


@pytest.mark.anyio
async def test_local(sandlot_local_provider):
    async with sandlot_local_provider.session() as sandbox:
        assert (await sandbox.exec("pwd", check=True)).stdout.strip() == sandbox.worktree
'''


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    found = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert found.get("sandlot") == "sandlot.testing.pytest_plugin"


def test_a_users_suite_gets_the_fixtures_without_a_conftest(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist", timeout=240)
    result.assert_outcomes(passed=3)


def test_no_sandlot_turns_the_plugin_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=USER_TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:sandlot", "-p", "no:randomly", "-p", "no:xdist", timeout=120
    )
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*fixture 'sandlot_*' not found*"])
