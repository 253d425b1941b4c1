"""Post-edit feedback for real: every case of cases.py written through the toolbox, on every
verify backend (local, docker, the fake Coder deployment), with the real tools; the edits an
agent makes (break, leave unformatted, fix) in all four languages; the budget held against a
deliberately slow linter; a missing tool said once; feedback turned off per call and per
toolbox."""

from __future__ import annotations

import time

import pytest

from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet
from tests.feedback.cases import BY_NAME, CASES, assert_feedback, stage
from tests.feedback.conftest import Projects

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("name", [case.name for case in CASES])
async def test_write_carries_the_feedback(feedback_projects: Projects, name: str) -> None:
    case = BY_NAME[name]
    sandbox = feedback_projects.sandbox
    root = await feedback_projects.fresh(case.fixture)
    _, env = await stage(sandbox, case, root, write=False)
    box = Toolbox(sandbox, WorkspaceSet({"w": root}), env=env, feedback_budget=case.budget)
    started = time.monotonic()
    result = await box.write(case.file, case.content)
    elapsed = time.monotonic() - started
    assert_feedback(case, result.feedback)
    assert result.ok and result.bytes_written == len(case.content.encode())
    if case.name == "python-slow":
        # The slow linter sleeps 60 s; the budget is 2 s. Generous slack: "did not hang".
        assert elapsed < 40, elapsed
        # ruf[f]: the pattern must not match the grep (or sh) that looks for it.
        left = await sandbox.exec(
            ["sh", "-c", 'grep -l -- "$1/.venv/bin/ruf[f]" /proc/[0-9]*/cmdline 2>/dev/null '
             "| wc -l", "sh", root])
        assert left.stdout.strip() == "0", "the stopped linter is still running"
        assert "did not finish within the 2 s feedback budget" in result.text


EDITS = {
    # language: (file, clean content, (old, new) that breaks the syntax, (old, new) that
    # leaves it unformatted)
    "go": ("fb/fb.go", BY_NAME["go-clean"].content, ("return a + b", "return a +"),
           ("return a + b", "return a+b ")),
    "python": ("src/pyfix/fb.py", BY_NAME["python-clean"].content, ("a + b", "a +"),
               ("a + b", "a+b")),
    "node": ("src/fb.js", BY_NAME["node-clean"].content, ("a + b;", "a +;"),
             ("a + b;", "a+b")),
    "rust": ("src/fb.rs", BY_NAME["rust-clean"].content, ("    a + b\n}", "    a +\n"),
             ("    a + b", "a+b")),
}
FIXTURE = {"go": "go", "python": "python", "node": "node-format", "rust": "rust"}


@pytest.mark.parametrize("language", sorted(EDITS))
async def test_edits_that_break_unformat_and_fix(feedback_projects: Projects,
                                                 language: str) -> None:
    file, clean, breaking, unformatting = EDITS[language]
    sandbox = feedback_projects.sandbox
    root = await feedback_projects.fresh(FIXTURE[language])
    box = Toolbox(sandbox, WorkspaceSet({"w": root}), feedback_budget=120)
    made = await box.write(file, clean)
    assert made.feedback is not None and made.feedback.ok, made.text

    broken = await box.edit(file, *breaking)
    assert broken.feedback is not None
    assert [f.rule for f in broken.feedback.findings if f.file == file][:1] == ["syntax"]
    assert broken.feedback.formatted is None and not broken.feedback.ok
    assert "[syntax]" in broken.text

    fixed = await box.edit(file, breaking[1], breaking[0])
    assert fixed.feedback is not None and fixed.feedback.ok, fixed.text

    messy = await box.edit(file, *unformatting)
    assert messy.feedback is not None
    assert (messy.feedback.formatted, messy.feedback.findings) == (False, []), messy.text
    assert "not formatted" in messy.text

    tidy = await box.edit(file, unformatting[1], unformatting[0])
    assert tidy.feedback is not None and tidy.feedback.ok and tidy.feedback.formatted


async def test_feedback_off_per_call_and_per_toolbox(feedback_projects: Projects) -> None:
    sandbox = feedback_projects.sandbox
    root = await feedback_projects.fresh("python")
    on = Toolbox(sandbox, WorkspaceSet({"w": root}))
    off = Toolbox(sandbox, WorkspaceSet({"w": root}), feedback=False)
    content = "import os\n"
    assert (await on.write("a.py", content)).feedback is not None
    skipped = await on.write("b.py", content, feedback=False)
    assert skipped.feedback is None and "feedback" not in skipped.text
    assert (await off.write("c.py", content)).feedback is None
    asked = await off.call("write", {"path": "d.py", "content": content, "feedback": True})
    assert getattr(asked, "feedback", None) is not None
    # A file no detector knows gets no feedback (and costs no check).
    assert (await on.write("notes.md", "# x\n")).feedback is None


async def test_a_missing_tool_is_said_once_per_toolbox(feedback_projects: Projects) -> None:
    case = BY_NAME["python-missing"]
    sandbox = feedback_projects.sandbox
    root = await feedback_projects.fresh(case.fixture)
    _, env = await stage(sandbox, case, root, write=False)
    box = Toolbox(sandbox, WorkspaceSet({"w": root}), env=env)
    first = await box.write("one.py", "x = 1\n")
    second = await box.write("two.py", "x = 1\n")
    assert first.ok and second.ok  # never an error
    assert first.text.count("ruff is not installed in the sandbox") == 1
    assert "not installed" not in second.text
    assert second.feedback is not None
    assert [c.status for c in second.feedback.checks] == ["missing", "missing"]
    # Another toolbox says it again, once.
    other = Toolbox(sandbox, WorkspaceSet({"w": root}), env=env)
    assert "ruff is not installed" in (await other.write("three.py", "x = 1\n")).text


async def test_no_scratch_file_outlives_an_edit_done_over_budget_or_cancelled(
    feedback_projects: Projects, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checks' scratch files in the sandbox's /dev/shm or /tmp (the host's, on the local
    backend) go with every edit: one that finished (removed in the background), one whose
    budget ended its checks, and one whose caller gave up while the checks ran."""
    import anyio

    from sandlot.feedback import checks

    case = BY_NAME["python-slow"]
    sandbox = feedback_projects.sandbox
    root = await feedback_projects.fresh(case.fixture)
    real = checks.secrets.token_hex
    used: list[str] = []

    def token_hex(n: int) -> str:  # every token made during the test, so its files are known
        used.append(real(n))
        return used[-1]

    monkeypatch.setattr(checks.secrets, "token_hex", token_hex)

    async def left() -> str:
        found = await sandbox.exec(["sh", "-c", "ls /tmp /dev/shm | grep -F -e " + " -e ".join(
            f"sandlot-feedback-{token}" for token in used) + "; true"], check=True)
        return found.stdout

    fast = Toolbox(sandbox, WorkspaceSet({"w": root}), feedback_budget=120)
    done = await fast.write("ok.py", "VALUE = 1\n")  # not slow: no .venv yet
    assert done.feedback is not None and done.feedback.checks[0].status != "over_budget"
    await stage(sandbox, case, root, write=False)  # now the project's ruff sleeps
    over = await Toolbox(sandbox, WorkspaceSet({"w": root}), feedback_budget=1).write(
        case.file, case.content)
    assert over.feedback is not None and over.feedback.over_budget
    with anyio.move_on_after(1.5) as cancelled:
        await Toolbox(sandbox, WorkspaceSet({"w": root}), feedback_budget=60).write(
            case.file.replace(".py", "_2.py"), case.content)
    assert cancelled.cancelled_caught
    for _ in range(100):  # the finished edit's removal runs in the background
        if not await left():
            break
        await anyio.sleep(0.1)
    assert await left() == ""
