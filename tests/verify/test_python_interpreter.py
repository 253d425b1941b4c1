"""Python tests run with the project's interpreter (`python3 -m pytest`, its .venv first), never a
bare `pytest` from elsewhere on PATH; the report says which interpreter ran."""

from __future__ import annotations

import pytest

import sandlot
from sandlot.errors import VerifyToolMissingError
from sandlot.verify import run_tests
from tests.helpers import require
from tests.verify.support import copy_fixture, missing_tools, tool_env

pytestmark = pytest.mark.anyio


def test_the_recorded_run_names_its_interpreter() -> None:
    from tests.verify.test_recorded import load, replay_tests

    assert load("python-tests").plan.argv[:3] == ["python3", "-m", "pytest"]
    assert replay_tests("python-tests").interpreter.endswith("/python3")


async def test_the_projects_venv_is_the_interpreter() -> None:
    require(not missing_tools(), f"verify tools missing: {missing_tools()}")
    async with sandlot.local(env=tool_env()).session() as sandbox:
        root = await copy_fixture(sandbox, "python")
        report = await run_tests(sandbox, root=root)
        assert report.interpreter.endswith("/python3") and report.failed == 3
        # A project .venv without pytest: its interpreter is the one used, and the error says
        # what to install there (a pytest elsewhere on PATH is not picked up instead).
        await sandbox.exec("python3 -m venv --without-pip .venv", cwd=root, check=True)
        with pytest.raises(VerifyToolMissingError, match="no pytest module"):
            await run_tests(sandbox, root=root)
