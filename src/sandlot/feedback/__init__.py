"""Post-edit feedback: the fast format and lint checks of one changed file, within a budget.

    from sandlot.feedback import check_file

    feedback = await check_file(sandbox, sandbox.worktree, "pkg/calc.go")
    feedback.formatted, feedback.findings

The toolbox's write and edit run it after every change (adr/0049).
"""

from ..verify.filecheck import FeedbackCheck, FileFeedback
from .checks import DEFAULT_BUDGET, check_file

__all__ = ["DEFAULT_BUDGET", "FeedbackCheck", "FileFeedback", "check_file"]
