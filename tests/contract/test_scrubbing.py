"""A secret given to a sandbox never comes back out of it, on every backend (issue 32).

A command prints the secret plainly, base64-encoded (at each of the 3 alignments), one byte
per write, inside JSON, on stderr, into a file later read through the toolbox, and into an
error; every output sandlot hands on (scrubbed results, line callbacks, toolbox and MCP
results, progress notifications, exception messages) is searched byte-wise for the value and
its encoded forms, and must show `[secret:TOK]` instead.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest
from mcp import Client

from sandlot import CommandFailed, Sandbox, Secret
from sandlot.mcp_server import build_server
from sandlot.secrets.forms import forms
from sandlot.tools import Toolbox

pytestmark = pytest.mark.anyio

MARK = "[secret:TOK]"

#: One byte per write, each its own chunk (the sleep keeps the pipe from merging them).
ONE_BYTE = ('s="$TOK"; while [ -n "$s" ]; do r="${s#?}"; printf %s "${s%"$r"}"; s="$r"; '
            "sleep 0.005; done; echo")
#: Each way a command leaks it: plainly, base64 at offsets 0-2, JSON-escaped, on stderr.
LEAKS = [
    'printf "plain: %s\\n" "$TOK"',
    'printf %s "$TOK" | base64 | tr -d "\\n"; echo',
    'printf x%s "$TOK" | base64 | tr -d "\\n"; echo',
    'printf xy%s "$TOK" | base64 | tr -d "\\n"; echo',
    'printf \'{"token": "%s"}\\n\' "$(printf %s "$TOK" | sed \'s/"/\\\\"/g\')"',
    'printf "on stderr: %s\\n" "$TOK" >&2',
    ONE_BYTE,
]


def new_secret() -> str:
    # Characters that change in base64, URL and JSON forms, and a shell's quoting.
    return f"sk_{secrets.token_hex(12)}/p+w=\"q'&%"


def assert_clean(value: str, *outputs: Any) -> None:
    """No output holds the value or any encoded form of it; each shows the marker."""
    needles = [form.encode() for form in forms(value)]
    for output in outputs:
        data = output if isinstance(output, bytes) else str(output).encode()
        found = [n for n in needles if n in data]
        assert not found, f"a form of the secret leaked ({len(found)} forms) in: {data[:300]!r}"
        assert MARK.encode() in data, f"no {MARK} in: {data[:300]!r}"


async def test_scrubbed_exec_hides_every_form(sandbox: Sandbox) -> None:
    value = new_secret()
    env = {"TOK": Secret(value)}
    for leak in LEAKS:
        lines: list[str] = []
        result = await sandbox.exec(leak, env=env, scrub=True, on_stdout=lines.append,
                                    on_stderr=lines.append)
        assert result.exit_code == 0, result.stderr
        assert_clean(value, result.stdout + result.stderr, "\n".join(lines))
    # Without scrub=True the Python API hands back the raw output, as documented.
    raw = await sandbox.exec('printf %s "$TOK"', env=env)
    assert raw.stdout == value


async def test_errors_never_carry_the_secret(sandbox: Sandbox) -> None:
    value = new_secret()
    with pytest.raises(CommandFailed) as failed:
        await sandbox.exec('printf "boom: %s\\n" "$TOK" >&2; exit 3',
                           env={"TOK": Secret(value)}, check=True)
    # Not even with scrub=False: an exception's message goes to logs and tracebacks.
    assert_clean(value, str(failed.value), failed.value.stderr)


async def test_toolbox_and_mcp_hide_every_form(sandbox: Sandbox, workdir: str) -> None:
    value = new_secret()
    box = Toolbox(sandbox, {"w": workdir}, secrets={"TOK": value})
    outputs: list[Any] = []
    async with box:
        listed = await box.call("secret_env", {})
        assert listed.model_dump()["names"] == ["TOK"] and value not in listed.text
        for leak in LEAKS:
            ran = await box.call("bash", {"command": leak, "secrets": ["TOK"]})
            assert ran.ok, ran.text
            outputs.append(ran.model_dump_json())
        # Into a file, read back through the file tools.
        await box.call("bash", {"command": 'printf "key=%s\\n" "$TOK" > leak.txt',
                                "secrets": ["TOK"]})
        for call, args in [("read", {"path": "leak.txt"}),
                           ("grep", {"pattern": "key="}),
                           ("bash", {"command": "cat leak.txt"})]:
            got = await box.call(call, args)
            assert got.ok, got.text
            outputs.append(got.model_dump_json())
        # A background shell writing one byte at a time, read while it runs.
        started = await box.bash(ONE_BYTE + "; sleep 0.3; " + ONE_BYTE, background=True,
                                 secrets=["TOK"])
        assert started.shell_id is not None
        shown = ""
        for _ in range(400):
            chunk = await box.bash_output(started.shell_id)
            shown += chunk.output
            if chunk.status != "running" and not chunk.more:
                break
        assert shown.count(MARK) == 2, shown
        outputs.append(shown)
        # A tool error whose message holds the secret (the command's stderr in a verify error
        # is the common case; an unknown name lists the configured names, never values).
        unknown = await box.call("bash", {"command": "true", "secrets": ["NOPE"]})
        assert not unknown.ok and "TOK" in unknown.text and value not in unknown.text
        # The same calls over MCP, with progress notifications.
        messages: list[str] = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            messages.append(message or "")

        async with Client(build_server(box, progress_interval=0.2)) as client:
            for leak in [*LEAKS, "cat leak.txt"]:
                result = await client.call_tool(
                    "bash", {"command": f"{leak}; sleep 0.5", "secrets": ["TOK"]},
                    progress_callback=on_progress)
                assert not result.is_error
                outputs.append(result.model_dump_json())
            read = await client.call_tool("read", {"path": "leak.txt"})
            outputs.append(read.model_dump_json())
    assert_clean(value, *outputs)
    with_output = [m for m in messages if "last:" in m]
    assert with_output, messages
    assert_clean(value, "\n".join(with_output))
