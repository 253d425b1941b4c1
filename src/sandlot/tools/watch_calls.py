"""The watched-process tools: watch_process (start a command, or attach to a durable process,
with crash patterns and an idle kill) and watch_process_events (what happened since a cursor).

Both sit on durable processes (sandlot.processes, adr/0051): the command survives a dropped
connection, and any toolbox attached to the sandbox reads its events by id and cursor.
"""

from __future__ import annotations

from ..errors import ProcessNotFoundError, ToolError
from ..processes import DEFAULT_PATTERNS
from .base import ToolboxBase
from .watch_tools import SHOWN, WatchEventsResult, WatchProcessResult, render, to_model


class WatchTools(ToolboxBase):
    """Durable processes watched for crash lines, idle silence and their exit."""

    async def watch_process(self, command: str | None = None, process_id: str | None = None,
                            patterns: list[str] | None = None, idle_kill: float | None = None,
                            *, workspace: str | None = None) -> WatchProcessResult:
        """Start `command` watched (or attach to `process_id`)."""
        self._mutating("watch_process")
        if (command is None) == (process_id is None):
            raise ToolError("watch_process: give either command (to start one) or process_id "
                            "(to attach to one), not both and not neither")
        if process_id is not None:
            if patterns or idle_kill is not None:
                raise ToolError("watch_process: patterns and idle_kill are set when the "
                                "process starts; attach with process_id alone")
            try:
                process = await self.sandbox.processes.get(process_id)
            except ProcessNotFoundError as exc:
                raise ToolError(f"watch_process: {exc}") from None
        else:
            assert command is not None
            if not command.strip():
                raise ToolError("watch_process: command is empty")
            ws = self.workspaces.choose(workspace)
            process = await self.sandbox.processes.start(
                command, cwd=ws.root, env=self.env, watch=list(patterns or []),
                idle_kill=idle_kill)
        own = await process.watch_patterns()
        info = await process.info()
        names = [*DEFAULT_PATTERNS, *own]
        verb = "Attached to" if process_id is not None else "Started"
        text = (f"{verb} watched process {process.id} ({info.command!r}, "
                f"{'running' if info.running else 'ended'}); watching for: "
                f"{', '.join(names)}. Read its events with "
                f'watch_process_events(process_id="{process.id}", cursor=0).')
        return WatchProcessResult(tool="watch_process", text=text, process_id=process.id,
                                  command=info.command, patterns=names, running=info.running,
                                  cursor=0)

    async def watch_process_events(self, process_id: str, cursor: int = 0
                                   ) -> WatchEventsResult:
        """The events of a watched process since `cursor`, without waiting."""
        self._mutating("watch_process_events")
        try:
            process = await self.sandbox.processes.get(process_id)
        except ProcessNotFoundError as exc:
            raise ToolError(f"watch_process_events: {exc}") from None
        found, following, over = await process.poll_events(cursor)
        events = [to_model(e) for e in found]
        lines = [render(e) for e in events[:SHOWN]]
        if len(events) > SHOWN:
            lines.append(f"[{len(events) - SHOWN} more events in `events`]")
        if not events:
            lines.append("(no new events; the process "
                         f"{'ended' if over else 'is still running'})")
        lines.append(f"[next cursor: {following}]")
        return WatchEventsResult(tool="watch_process_events", text="\n".join(lines),
                                 process_id=process.id, events=events, cursor=following,
                                 ended=over)
