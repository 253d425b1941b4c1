"""bash in the workspace root: foreground results, timeouts, bounded output, background shells."""

from __future__ import annotations

import uuid
from types import ModuleType

import anyio
import pytest

from sandlot import Sandbox
from sandlot.errors import ToolError
from sandlot.tools import Toolbox
from sandlot.tools.models import BashResult
from sandlot.workspaces import WorkspaceSet
from tests.helpers import drop_connection, host_tagged

pytestmark = pytest.mark.anyio


async def test_bash_runs_in_the_root_and_reports(box: Toolbox) -> None:
    result = await box.bash("test -f go.mod && echo out; echo err >&2; exit 3",
                            workspace="primary")
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert result.text == "out\n[stderr]\nerr\n[exit code 3]"
    assert result.workspace == "primary" and not result.timed_out


async def test_bash_timeout_ends_the_command(box: Toolbox) -> None:
    result = await box.bash("echo started; sleep 30", timeout=1, workspace="primary")
    assert result.timed_out and result.stdout == "started\n"
    assert result.text.endswith(
        "[timed out after 1s; the command and everything it started were ended]")


async def test_bash_idle_timeout_ends_a_silent_command(box: Toolbox) -> None:
    result = await box.call("bash", {"command": "echo waiting; sleep 30", "idle_timeout": 1,
                                     "workspace": "primary"})
    assert isinstance(result, BashResult) and result.timed_out
    assert result.text == ("waiting\n[no output for its idle_timeout; the command and "
                           "everything it started were ended]")


async def test_bash_output_is_bounded_with_a_note(sandbox: Sandbox,
                                                  workspaces: WorkspaceSet) -> None:
    box = Toolbox(sandbox, workspaces, bash_output_bytes=1000)
    result = await box.bash("seq 1 10000", workspace="primary")
    assert result.truncated and result.stdout.endswith("9999\n10000\n")
    assert len(result.stdout) <= 1000
    assert result.text.splitlines()[0] == "[stdout cut: showing its last 1000 bytes]"


async def test_background_shells_are_read_incrementally_and_killed(box: Toolbox) -> None:
    started = await box.bash("echo one; echo warn >&2; sleep 60",
                             background=True, workspace="extension")
    shell_id = started.shell_id
    assert shell_id is not None and started.exit_code is None
    lines: list[str] = []
    with anyio.fail_after(20):
        while len(lines) < 2:
            lines += (await box.bash_output(shell_id)).output.splitlines()
            await anyio.sleep(0.05)
    # stdout and stderr as a terminal shows them: one stream, in the order written.
    assert lines == ["one", "warn"]
    quiet = await box.bash_output(shell_id)
    assert (quiet.status, quiet.output, quiet.exit_code) == ("running", "", None)
    assert quiet.text == f"(no new output)\n[shell {shell_id}: running]"
    killed = await box.kill_shell(shell_id)
    assert killed.status == "killed" and killed.exit_code == 137
    after = await box.bash_output(shell_id)
    assert after.status == "killed"


async def test_a_background_shell_that_exits(box: Toolbox) -> None:
    started = await box.bash("pwd; exit 4", background=True, workspace="primary")
    assert started.shell_id is not None
    collected = ""
    with anyio.fail_after(20):
        while True:
            out = await box.bash_output(started.shell_id)
            collected += out.output
            if out.status != "running":
                break
            await anyio.sleep(0.05)
    assert collected.endswith("/primary\n")
    assert (out.status, out.exit_code) == ("exited", 4)
    assert out.text.endswith(f"[shell {started.shell_id}: exited, exit code 4]")
    again = await box.kill_shell(started.shell_id)
    assert again.status == "exited"


async def test_unknown_shells_and_closing(box: Toolbox) -> None:
    with pytest.raises(ToolError) as info:
        await box.bash_output("shell-99")
    assert str(info.value) == 'bash_output: no background shell "shell-99"; known shells: none'
    started = await box.bash("sleep 60", background=True, workspace="primary")
    await box.aclose()
    assert (await box.bash_output(started.shell_id or "")).status == "killed"



_ESCAPER = ("export TEST_TAG={tag}; "
            "setsid sh -c 'echo $$ > escaped.pid; exec sleep 600' & "
            "( sh -c 'echo $$ > forked.pid; exec sleep 600' & ); sleep 100")


async def _alive(backend: ModuleType, box: Toolbox, tag: str) -> str:
    if not backend.SHARED_PIDS:  # bwrap: each command has its own PID namespace
        return " ".join(map(str, host_tagged(tag)))
    probe = await box.bash(
        "for f in escaped.pid forked.pid; do p=$(cat $f); "
        "s=$(sed 's/.*) //' /proc/$p/stat 2>/dev/null | cut -d' ' -f1); "
        "[ -n \"$s\" ] && [ \"$s\" != Z ] && echo \"$f alive\"; done; true",
        workspace="primary",
    )
    return probe.stdout


async def test_bash_timeout_ends_what_escaped_the_group(backend: ModuleType, box: Toolbox) -> None:
    tag = uuid.uuid4().hex
    with anyio.fail_after(60):
        result = await box.bash(_ESCAPER.format(tag=tag), timeout=1.5, workspace="primary")
    assert result.timed_out
    assert await _alive(backend, box, tag) == ""


async def test_kill_shell_ends_what_escaped_the_group(backend: ModuleType, box: Toolbox) -> None:
    tag = uuid.uuid4().hex
    started = await box.bash(_ESCAPER.format(tag=tag), background=True, workspace="primary")
    assert started.shell_id is not None
    with anyio.fail_after(30):
        # Polls the sandbox: nothing signals when the background shell has forked.
        while "forked" not in (await box.bash("ls", workspace="primary")).stdout:  # noqa: ASYNC110
            await anyio.sleep(0.1)
    with anyio.fail_after(60):
        killed = await box.kill_shell(started.shell_id)
    assert killed.status == "killed"
    assert await _alive(backend, box, tag) == ""


async def test_a_background_shell_outlives_the_connection_and_its_toolbox(
    backend: ModuleType, sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    box = Toolbox(sandbox, workspaces)
    started = await box.bash("echo before; sleep 1; echo after; sleep 600",
                             background=True, workspace="primary")
    shell_id = started.shell_id
    assert shell_id is not None
    await drop_connection(sandbox)
    # A new toolbox (an MCP server started again, say) on the same sandbox reads it on.
    other = Toolbox(sandbox, workspaces)
    seen = ""
    with anyio.fail_after(30):
        while "after" not in seen:
            out = await other.bash_output(shell_id)
            assert out.status == "running"
            seen += out.output
            await anyio.sleep(0.2)
    assert seen == "before\nafter\n"
    killed = await other.kill_shell(shell_id)
    assert killed.status == "killed" and killed.exit_code == 137


async def test_bash_output_pages_long_output_and_keeps_characters_whole(
    sandbox: Sandbox, workspaces: WorkspaceSet
) -> None:
    box = Toolbox(sandbox, workspaces, bash_output_bytes=1001)
    # 500 two-byte characters then a newline: the first page ends inside a character.
    started = await box.bash("printf '%500s\\n' '' | sed 's/ /é/g'", background=True,
                             workspace="primary")
    assert started.shell_id is not None
    pages: list[str] = []
    with anyio.fail_after(30):
        while True:
            out = await box.bash_output(started.shell_id)
            pages.append(out.output)
            if out.status != "running" and not out.more:
                break
            await anyio.sleep(0.1)
    assert "".join(pages) == "é" * 500 + "\n"
    assert "\ufffd" not in "".join(pages)
