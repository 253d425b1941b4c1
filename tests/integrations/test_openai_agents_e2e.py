"""The OpenAI Agents SDK end to end on every backend, with no network model: a scripted model
(the SDK's own `Model` interface, fixed tool calls) drives a `SandboxAgent` whose sandbox is a
sandlot one. The agent writes a file (apply_patch), runs it (exec_command), reads the output,
patches the file, and talks to a process on a terminal (exec_command tty + write_stdin); the
test then checks the files in the sandbox itself and the outputs the agent saw.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests import backends
from tests.integrations.openai_harness import (
    call,
    message,
    patch,
    provider_config,
    require_packages,
    scripted_model,
    tool_outputs,
)

require_packages()

from agents import Runner  # noqa: E402
from agents.run import RunConfig  # noqa: E402
from agents.sandbox import SandboxAgent, SandboxRunConfig  # noqa: E402
from agents.sandbox.capabilities import Filesystem, Shell  # noqa: E402

from sandlot.integrations.openai_agents import (  # noqa: E402
    SandlotSandboxClient,
    SandlotSandboxClientOptions,
    SandlotSandboxSession,
)

pytestmark = pytest.mark.anyio

_ADD = ('*** Begin Patch\n*** Add File: greet.sh\n+echo "hello from $1"\n'
        '+echo "second line"\n*** End Patch\n')
_UPDATE = ('*** Begin Patch\n*** Update File: greet.sh\n@@\n-echo "hello from $1"\n'
           '+echo "goodbye from $1"\n*** End Patch\n')
_ECHO_LOOP = ("printf 'ready\\n'; while IFS= read -r line; do printf 'got:%s\\n' \"$line\"; "
              "done")


def _session_id(model_input: Any) -> int:
    """The process id exec_command reported for the terminal process (call t1)."""
    for item in model_input:
        if (isinstance(item, dict) and item.get("call_id") == "t1"
                and item.get("type") == "function_call_output"):
            found = re.search(r"Process running with session ID (\d+)", str(item["output"]))
            assert found, f"the terminal process did not stay running: {item['output']!r}"
            return int(found.group(1))
    raise AssertionError("no output for the terminal call")


def _turns() -> list[Any]:
    return [
        [patch(_ADD, "p1")],
        [call("exec_command", {"cmd": "sh greet.sh sandlot > out.txt && echo wrote",
                               "yield_time_ms": 20000}, "x1")],
        [call("exec_command", {"cmd": "cat out.txt", "yield_time_ms": 20000}, "x2")],
        [patch(_UPDATE, "p2")],
        [call("exec_command", {"cmd": "sh greet.sh again", "yield_time_ms": 20000}, "x3")],
        [call("exec_command", {"cmd": _ECHO_LOOP, "tty": True, "yield_time_ms": 3000}, "t1")],
        lambda model_input: [call("write_stdin", {
            "session_id": _session_id(model_input), "chars": "hello pty\n",
            "yield_time_ms": 3000}, "t2")],
        [message("done")],
    ]


@pytest.mark.parametrize("backend", backends.selected())
async def test_scripted_agent_writes_runs_reads_and_patches(backend: str) -> None:
    async with provider_config(backend) as (config, token):
        client = SandlotSandboxClient(session_token=token)
        session = await client.create(options=SandlotSandboxClientOptions(provider=config))
        inner = session._inner
        assert isinstance(inner, SandlotSandboxSession)
        try:
            async with session:
                model = scripted_model(_turns())
                agent = SandboxAgent(name="dev", instructions="work in the sandbox",
                                     model=model, capabilities=[Filesystem(), Shell()])
                result = await Runner.run(agent, "write, run, read and patch greet.sh",
                                          run_config=RunConfig(sandbox=SandboxRunConfig(
                                              session=session)))
                assert result.final_output == "done"
                assert {"exec_command", "write_stdin", "apply_patch"} <= set(model.tools)
                seen = tool_outputs(model)
                assert "wrote" in seen["x1"]
                assert "hello from sandlot" in seen["x2"]
                assert "goodbye from again" in seen["x3"] and "second line" in seen["x3"]
                assert "ready" in seen["t1"]
                assert "got:hello pty" in seen["t2"].replace("\r\n", "\n")
                # The files, read by the sandbox itself in its worktree.
                sandbox = inner.sandbox
                assert inner.state.manifest.root == sandbox.worktree
                greet = await sandbox.exec(["cat", "greet.sh"], check=True)
                assert greet.stdout.splitlines() == ['echo "goodbye from $1"',
                                                     'echo "second line"']
                out = await sandbox.exec(["cat", "out.txt"], check=True)
                assert out.stdout == "hello from sandlot\nsecond line\n"
        finally:
            await client.delete(session)
        assert sandbox.closed
