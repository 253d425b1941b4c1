"""The fan-out tables show why a sandbox failed (issue 26.8): its stderr tail under the exit
status, wrapped, without crushing the short columns. Rendered by rich at fixed widths; the
failures are real commands' (CommandFailed from a local sandbox), not hand-made errors."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

import sandlot
from sandlot import CommandFailed
from sandlot.fanout.display import LiveView, summary
from sandlot.fanout.models import FanoutEvent, FanoutReport, SandboxOutcome, Slot, Stage, Timings

pytestmark = pytest.mark.anyio

LONG = "E   AssertionError: " + "a very long explanation " * 12
SCRIPT = ("echo collected 3 items >&2; echo first detail >&2; "
          f"echo '{LONG}' >&2; echo 'FAILED test_x.py::test_one - assert 3 == 4' >&2; exit 1")


async def _failure() -> CommandFailed:
    async with sandlot.local().session() as sandbox:
        with pytest.raises(CommandFailed) as caught:
            await sandbox.exec(SCRIPT, check=True)
    return caught.value


def _render(renderable: object, width: int) -> list[str]:
    console = Console(width=width, file=io.StringIO(), color_system=None,
                                             force_terminal=False)
    console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(output, str)
    return output.splitlines()


def _column(lines: list[str], header: str) -> str:
    """The text of one column (rows below the header line), spaces dropped: folded words
    read back whole, and a cropped column would lose characters."""
    top = next(index for index, line in enumerate(lines) if line.startswith("#"))
    start = lines[top].index(header)
    return "".join(line[start:] for line in lines[top + 1:]).replace(" ", "")


@pytest.mark.parametrize("width", [80, 120])
async def test_summary_shows_the_stderr_tail_and_keeps_the_columns(width: int) -> None:
    error = await _failure()
    outcomes = [
        SandboxOutcome(Slot(0, "local-0"), "local", Stage.DONE, "sandlot-abcdef12", "delete",
                       True, 0, None, Timings(1.2, 1.2, 3.4, 0.1)),
        SandboxOutcome(Slot(1, "local-1"), "local", Stage.FAILED, "sandlot-12345678", "delete",
                       True, None, error, Timings(1.2, 1.2, 3.4, 0.1)),
    ]
    lines = _render(summary(FanoutReport(outcomes, 5.0), {1: {"exit_code": 1}}), width)
    header = next(line for line in lines if line.startswith("#"))
    assert header.split() == ["#", "label", "result", "exit", "create", "job", "close",
                              "sandbox", "error"]
    assert "local-0" in lines[2] and "local-1" in "\n".join(lines)
    error_text = _column(lines, "error")
    assert error_text.startswith("exitstatus1firstdetail")  # the last three lines, in order
    assert "collected" not in error_text
    assert "AssertionError:averylongexplanation" in error_text
    assert error_text.endswith("FAILEDtest_x.py::test_one-assert3==4")


async def test_the_live_table_and_the_log_lines_show_it_too() -> None:
    error = await _failure()
    slots = [Slot(0, "local-0"), Slot(1, "local-1")]
    log = Console(width=200, file=io.StringIO(), color_system=None,
                                         force_terminal=False)
    view = LiveView(slots, log)
    with view:  # not a terminal: one line per event
        view.on_event(FanoutEvent(slots[1], Stage.FAILED, 2.0, "sandlot-12345678", error))
    line = log.file.getvalue()  # type: ignore[attr-defined]
    assert "failed (2.0s): exit status 1 | first detail | E   AssertionError" in line
    assert line.rstrip().endswith("FAILED test_x.py::test_one - assert 3 == 4")
    text = _column(_render(view.table(), 80), "note")
    assert text.startswith("exitstatus1firstdetail")
    assert text.endswith("assert3==4")


def test_a_fix_is_worded_as_the_flag() -> None:
    from sandlot.errors import FORCE, BranchExistsError
    from sandlot.fanout.display import describe_error

    error = BranchExistsError(f"branch 'try/0' already exists; {FORCE.python} to move it")
    assert describe_error(error.hinted(FORCE)) == (
        "BranchExistsError: branch 'try/0' already exists; pass --force to move it")
