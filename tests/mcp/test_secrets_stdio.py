"""`sandlot mcp --secret` as an agent launches it: the model asks for a secret by name, the
command gets the value, no tool result shows it; a missing host variable fails start-up."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp.support import command, env

pytestmark = pytest.mark.anyio

VALUE = "mcp-sec_1b2c3d4e5f6a7b8c/+x"


def text(result: Any) -> str:
    return "".join(block.text for block in result.content)


async def test_an_agent_uses_a_secret_by_name_only() -> None:
    argv = command("--secret", "API_TOKEN=HOST_API_TOKEN")
    params = StdioServerParameters(command=argv[0], args=argv[1:],
                                   env=env(HOST_API_TOKEN=VALUE))
    async with Client(params) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "secret_env" in names
        listed = await client.call_tool("secret_env", {})
        assert listed.structured_content["names"] == ["API_TOKEN"]
        ran = await client.call_tool("bash", {
            "command": 'test "$API_TOKEN" = "' + VALUE + '" && echo "got $API_TOKEN"',
            "secrets": ["API_TOKEN"]})
        assert not ran.is_error and text(ran) == "got [secret:API_TOKEN]\n[exit code 0]"
        unknown = await client.call_tool("bash", {"command": "true", "secrets": ["NOPE"]})
        assert unknown.is_error and "configured secrets: API_TOKEN" in text(unknown)
        without = await client.call_tool("bash", {"command": 'echo "[$API_TOKEN]"'})
        assert text(without).startswith("[]")  # only when asked for
    assert VALUE not in repr(listed) + repr(ran) + repr(unknown)


def test_a_missing_variable_fails_start_up_naming_it() -> None:
    done = subprocess.run(command("--secret", "API_TOKEN=UNSET_VARIABLE_X"), env=env(),
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "UNSET_VARIABLE_X is not set" in done.stderr
