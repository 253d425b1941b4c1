"""Fan-out: one job on N sandboxes at once, with events while it runs and one report.

    from sandlot import fanout

    async def job(sandbox, slot):
        return (await sandbox.exec("make test")).exit_code

    report = await fanout.run(job, sandlot.docker(image="x", on_close="delete"), n=8)
"""

from .models import FanoutEvent, FanoutReport, SandboxOutcome, Slot, Stage, Timings
from .runner import DEFAULT_MAX_PARALLEL, Job, run

__all__ = [
    "DEFAULT_MAX_PARALLEL",
    "FanoutEvent",
    "FanoutReport",
    "Job",
    "SandboxOutcome",
    "Slot",
    "Stage",
    "Timings",
    "run",
]
