"""idle_timeout: a command silent for that long is ended (its whole tree), one that keeps
printing is spared however long it runs, and the result says which limit fired."""

from __future__ import annotations

import pytest

from sandlot import CommandTimedOut, ConfigurationError, Sandbox

pytestmark = pytest.mark.anyio

# Prints a line every 0.2 s for about 4 s: never silent for 1.5 s, longer than 1.5 s in all.
_STEADY = "i=0; while [ $i -lt 20 ]; do echo tick $i; i=$((i+1)); sleep 0.2; done; echo done"


async def test_a_silent_command_is_ended_with_its_tree(sandbox: Sandbox, workdir: str) -> None:
    # A background child would write beats forever; it must end with the command.
    script = (
        "(i=0; while :; do i=$((i+1)); echo $i > beat; sleep 0.05; done) & "
        "echo started; sleep 600"
    )
    result = await sandbox.exec(script, cwd=workdir, idle_timeout=1.5)
    assert result.timed_out and result.timed_out_by == "idle_timeout"
    assert result.stdout == "started\n"  # the output so far is kept
    first = (await sandbox.exec("cat beat", cwd=workdir)).stdout
    second = (await sandbox.exec("sleep 0.5; cat beat", cwd=workdir)).stdout
    assert first == second, "a child of the silent command is still running"
    with pytest.raises(CommandTimedOut, match="produced no output for its idle_timeout"):
        result.check()


async def test_steady_output_spares_a_command_longer_than_the_idle_bound(
    sandbox: Sandbox,
) -> None:
    result = await sandbox.exec(_STEADY, idle_timeout=1.5)
    assert not result.timed_out and result.timed_out_by is None
    assert result.exit_code == 0 and result.stdout.endswith("tick 19\ndone\n")


async def test_stderr_counts_as_output(sandbox: Sandbox) -> None:
    result = await sandbox.exec(_STEADY.replace("echo tick $i", "echo tick $i >&2"),
                                idle_timeout=1.5)
    assert result.ok and "tick 19" in result.stderr


async def test_the_whole_run_timeout_still_bounds_a_chatty_command(sandbox: Sandbox) -> None:
    result = await sandbox.exec("while :; do echo x; sleep 0.1; done", timeout=1.5,
                                idle_timeout=30)
    assert result.timed_out and result.timed_out_by == "timeout"


async def test_a_background_process_has_an_idle_timeout_too(sandbox: Sandbox) -> None:
    process = await sandbox.start("echo up; sleep 600", idle_timeout=1)
    result = await process.wait()
    assert result.timed_out_by == "idle_timeout" and result.stdout == "up\n"


@pytest.mark.parametrize("bad", [0, -1, True, "5"])
async def test_a_bad_idle_timeout_is_a_typed_error(sandbox: Sandbox, bad: object) -> None:
    with pytest.raises(ConfigurationError, match="idle_timeout must be a positive number"):
        await sandbox.exec("true", idle_timeout=bad)  # type: ignore[arg-type]
