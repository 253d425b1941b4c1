"""Post-edit feedback as a step AFTER write and edit: the file operation runs unchanged (its
internals live in file_tools.py), then the changed file's fast checks run (sandlot.feedback)
and their result rides on the tool's result, as `feedback` and as lines of its text.

Feedback never fails the edit: the file is written whatever the checks say, a check over the
budget or a tool not installed is a note, and if the checks themselves cannot run (the sandbox
went away) the edit's result says so in its text.
"""

from __future__ import annotations

from typing import TypeVar

from ..errors import SandlotError
from ..feedback import check_file
from ..verify.filecheck import FileFeedback
from .file_tools import FileTools
from .models import EditResult, WriteResult

#: How many findings the text lists (all of them stay in `feedback.findings`).
SHOWN = 20

_Result = TypeVar("_Result", WriteResult, EditResult)


class FeedbackStep(FileTools):
    """write and edit, each followed by the changed file's format and lint checks."""

    feedback: bool
    feedback_budget: float
    _feedback_said: set[str]

    async def write(self, path: str, content: str, *, workspace: str | None = None,
                    feedback: bool | None = None) -> WriteResult:
        """Write the whole file (see FileTools.write), then check it unless `feedback` is
        False (None: the toolbox's setting)."""
        result = await super().write(path, content, workspace=workspace)
        return await self._after(result, feedback)

    async def edit(self, path: str, old: str, new: str, replace_all: bool = False, *,
                   workspace: str | None = None, feedback: bool | None = None) -> EditResult:
        """Replace exact text (see FileTools.edit), then check the file unless `feedback` is
        False (None: the toolbox's setting)."""
        result = await super().edit(path, old, new, replace_all, workspace=workspace)
        return await self._after(result, feedback)

    async def _after(self, result: _Result, wanted: bool | None) -> _Result:
        if not (self.feedback if wanted is None else wanted):
            return result
        root = self.workspaces.choose(result.workspace).root
        try:
            found = await check_file(self.sandbox, root, result.path,
                                     budget=self.feedback_budget, env=self.env,
                                     said=self._feedback_said)
        except SandlotError as exc:
            return result.model_copy(update={
                "text": f"{result.text}\n[feedback could not run: {exc}]"})
        if found is None:
            return result
        return result.model_copy(update={"feedback": found,
                                         "text": f"{result.text}\n{render(found)}"})


def render(feedback: FileFeedback) -> str:
    """The feedback as the model reads it: one summary line, the findings, the notes."""
    ran = [c.name for c in feedback.checks if c.status not in ("skipped", "missing")]
    tools = f" ({', '.join(ran)})" if ran else ""
    if feedback.formatted is False:
        where = ""
        if feedback.format_lines:
            where = f" at line{'s' if len(feedback.format_lines) > 1 else ''} " + ", ".join(
                str(n) for n in feedback.format_lines[:10])
        form = f"not formatted{where}"
    elif feedback.formatted:
        form = "formatted"
    else:
        form = ""
    count = len(feedback.findings)
    found = f"{count} finding{'s' if count != 1 else ''}" if count else "no findings"
    summary = ", ".join(p for p in (form, found) if p)
    lines = [f"feedback{tools}: {summary}" if ran else "feedback: no check ran"]
    for f in feedback.findings[:SHOWN]:
        place = ":".join(str(p) for p in (f.file, f.line, f.column) if p is not None)
        rule = f" [{f.rule}]" if f.rule else ""
        lines.append(f"{place}: {f.severity}{rule}: {f.message}")
    if count > SHOWN:
        lines.append(f"[{count - SHOWN} more findings in feedback.findings]")
    lines.extend(f"[{note}]" for note in feedback.notes)
    return "\n".join(lines)
