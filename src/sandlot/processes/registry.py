"""`sandbox.processes`: start durable processes, list them, and attach to one by id."""

from __future__ import annotations

import base64
import logging
import math
import posixpath
import re
import secrets
import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import anyio

from .. import _shell
from .._engine import engine_of
from ..errors import ConfigurationError, ProcessNotFoundError, ProcessStartError
from ..secrets import EnvValue
from . import parse, scripts
from . import watch as _watch
from .models import DurableProcessInfo
from .process import DurableProcess

if TYPE_CHECKING:
    from ..sandbox import Sandbox

#: Output is kept in segments of this many bytes ...
DEFAULT_SEGMENT_BYTES = 1 << 20
#: ... of which the newest this many (so at most 8 MiB of a process's output is kept).
DEFAULT_KEEP_SEGMENTS = 8

#: list() prints at most this many records, and stops after about this many bytes of them.
LIST_MAX_RECORDS = 10_000
LIST_MAX_BYTES = 6 << 20

#: How long start() waits for the supervisor to detach before it gives up on the start.
DETACH_SECONDS = 30

log = logging.getLogger("sandlot")

_ID = re.compile(r"[0-9a-f]{12}\Z")


class DurableProcesses:
    """The durable processes of one sandbox.

    A durable process runs detached from the command that started it and from this program:
    in its own session, output (stdout and stderr together) written to bounded files in the
    sandbox, exit status recorded. Any program attached to the same sandbox sees it: list it,
    reattach by id, read from a byte cursor, follow, wait, signal, remove. Its files live in
    `<worktree>/.sandlot/processes/<id>/` (ignored by git). A sandbox closed with
    `on_close="leave"` leaves its durable processes running; one that is deleted or stopped
    ends them.
    """

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        root: str | None = None,
        segment_bytes: int = DEFAULT_SEGMENT_BYTES,
        keep_segments: int = DEFAULT_KEEP_SEGMENTS,
    ) -> None:
        if segment_bytes < 1024 or keep_segments < 2:
            raise ConfigurationError(
                "segment_bytes must be at least 1024 and keep_segments at least 2, got "
                f"{segment_bytes} and {keep_segments}"
            )
        self.sandbox = sandbox
        #: The engine below the sandbox (_engine.py): marks and detached starts.
        self._exec_engine = engine_of(sandbox)
        self.state_dir = posixpath.join(sandbox.worktree, ".sandlot")
        self.root = _shell.validate_sandbox_path(
            root if root is not None else posixpath.join(self.state_dir, "processes"),
            "processes root",
        )
        self.segment_bytes = segment_bytes
        self.keep_segments = keep_segments

    async def run_script(
        self, script: str, *args: str, max_output: int = 1 << 16,
        seconds: float = scripts.SCRIPT_SECONDS,
    ) -> str:
        result = await self.sandbox.exec(["sh", "-c", script, "sandlot-processes", *args],
                                         cwd="/", max_output=max_output, timeout=seconds)
        if result.timed_out:
            # The scripts open only regular files, but the sandbox can swap one for a FIFO
            # between the check and the open: no read of its files may wait for ever.
            raise parse.ProcessRecordError(
                f"reading durable processes in {self.sandbox.name!r} did not finish in "
                f"{seconds:g}s: a file under {self.root} blocks reads (a FIFO in place of a "
                "record?) or the sandbox is overloaded"
            )
        if result.exit_code != 0 or result.truncated:
            raise parse.ProcessRecordError(
                f"reading durable processes in {self.sandbox.name!r} failed (exit "
                f"{result.exit_code}): {result.stderr.strip()[-500:]}"
            )
        return result.stdout

    async def start(
        self,
        command: str | Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, EnvValue] | None = None,
        timeout: float | None = None,
        idle_timeout: float | None = None,
        watch: Sequence[str] | None = None,
        idle_kill: float | None = None,
    ) -> DurableProcess:
        """Start `command` (a shell string, or an argv) as a durable process.

        `cwd` defaults to the worktree. `timeout` ends it (its whole group) after that many
        seconds, `idle_timeout` after that long without output; whole seconds, rounded up, and
        its info's `ended_by` says which fired. `watch` adds regular expressions its
        `events()` report lines matching (besides the default crash patterns); `idle_kill`
        is `idle_timeout` by the name watched processes use (an `idle_kill` event).
        """
        if idle_kill is not None:
            if idle_timeout is not None:
                raise ConfigurationError("pass idle_kill or idle_timeout, not both (they are "
                                         "the same limit)")
            idle_timeout = idle_kill
        patterns = _watch.validate(watch)
        line = _command_line(command)
        workdir = (_shell.validate_sandbox_path(cwd, "cwd") if cwd is not None
                   else self.sandbox.worktree)
        checked_env = _shell.validate_env(self.sandbox.secrets.reveal_env(env))
        limit = _seconds(timeout, "timeout")
        idle = _seconds(idle_timeout, "idle_timeout")
        process = DurableProcess(self, secrets.token_hex(6))
        prepared = await self.sandbox.exec(
            ["sh", "-c", scripts.PREPARE, "sandlot-processes", process.directory, _b64(line),
             _b64(workdir), posixpath.join(self.state_dir, ".gitignore"), workdir],
            cwd="/",
        )
        if prepared.exit_code != 0:
            raise ProcessStartError(
                f"cannot start a durable process in {self.sandbox.name!r}: "
                f"{prepared.stderr.strip()[-500:] or f'exit {prepared.exit_code}'}"
            )
        try:
            if patterns:
                await self.run_script(scripts.WATCH_WRITE, process.directory,
                                      _watch.encode(patterns))
                process._patterns = patterns
            await self._exec_engine.spawn_detached(
                ["env", f"SANDLOT_RUN={process.mark}", "sh", "-c",
                 scripts.SUPERVISOR, "sandlot-durable", process.directory,
                 str(self.segment_bytes), str(self.keep_segments), str(limit), str(idle), line],
                cwd=workdir, env=checked_env,
            )
            # The hook returns once the supervisor was launched, not once it runs: until it
            # has detached, it still holds the starting command's mark, and a close (even
            # one that leaves) sweeping that mark would end it before it wrote anything.
            state = (await self.run_script(scripts.DETACHED, process.directory,
                                           str(DETACH_SECONDS),
                                           seconds=DETACH_SECONDS + scripts.SCRIPT_SECONDS)).strip()
            if state != "up":
                raise ProcessStartError(
                    f"cannot start a durable process in {self.sandbox.name!r}: its supervisor "
                    f"did not start within {DETACH_SECONDS}s (the sandbox may be overloaded); "
                    "try again"
                )
        except BaseException:
            # Nothing half-started stays behind: the directory goes with the failed start.
            await _forget(self, process)
            raise
        return process

    async def list(self) -> list[DurableProcessInfo]:
        """Every durable process whose files are in this sandbox, oldest first."""
        out = await self.run_script(scripts.LIST, self.root, str(LIST_MAX_RECORDS),
                                    str(LIST_MAX_BYTES), max_output=8 << 20)
        found = parse.records(out)
        if not found:
            return []
        now = parse.number(found[0], "now")
        infos: list[DurableProcessInfo] = []
        for record in found[1:]:
            if "more" in record:
                log.warning(
                    "sandbox %s: list() shows %d durable processes and leaves out %s more "
                    "(at most %d, or about %d MiB of records, per list); remove() ended ones",
                    self.sandbox.name, len(infos), record["more"][:20], LIST_MAX_RECORDS,
                    LIST_MAX_BYTES >> 20,
                )
                continue
            if not _ID.match(record.get("id", "")):
                continue
            try:
                infos.append(parse.info(record["id"], record, now))
            except parse.ProcessRecordError as exc:
                # One spoiled record is that process's error (get() raises it), not the list's.
                log.warning("sandbox %s: durable process left out of list(): %s",
                            self.sandbox.name, exc)
        return sorted(infos, key=lambda info: (info.started_at, info.id))

    async def get(self, process_id: str) -> DurableProcess:
        """Reattach to a durable process by id (from `start()` or `list()`)."""
        if not isinstance(process_id, str) or not _ID.match(process_id.strip()):
            raise ProcessNotFoundError(
                f"{process_id!r} is not a durable process id (12 hex digits, as start() and "
                "list() give them)"
            )
        process = DurableProcess(self, process_id.strip())
        await process.info()  # raises ProcessNotFoundError when it is not there
        return process


def _command_line(command: str | Sequence[str]) -> str:
    argv = _shell.to_argv(command)
    if isinstance(command, str):
        return command
    return "exec " + shlex.join(argv)


def _seconds(value: float | None, name: str) -> int:
    """Whole seconds for the supervisor, rounded up; 0 for no limit."""
    checked = _shell.validate_seconds(value, name)
    return 0 if checked is None else math.ceil(checked)


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")


async def _forget(processes: DurableProcesses, process: DurableProcess) -> None:
    with anyio.CancelScope(shield=True):
        try:
            await processes.run_script(scripts.REMOVE, process.directory)
        except Exception as exc:  # the start's own error is the one to report
            log.warning(
                "could not remove the files of the durable process that failed to start: %s",
                exc,
            )
