"""What both local backends share: the worktree is a host directory, and a command is a host
subprocess in a process group of its own, so a timeout or kill ends the whole tree.

`LocalSandbox` (local.py) runs that subprocess as it is; `BwrapSandbox` (local_bwrap.py) wraps
it in bubblewrap by overriding `_wrap`. Everything else here is the same for both: the run
marks are found in this host's /proc (a bubblewrap PID namespace is a child of ours), and the
worktree goes with `on_close="delete"`.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING

from .. import _run_marks
from .._host_io import feed_stdin, pump, run_piped, run_with_pty, stop_feeding
from .._process_group import signal_group
from .._tree import remove_tree
from ..sandbox import InteractiveSpec, RunningCommand, Sandbox, SpawnSpec
from .local_env import sandbox_environment

if TYPE_CHECKING:
    from .local import LocalOptions

#: After a kill, how long to wait for the pipes to drain before giving up on them
#: (a daemon that escaped the process group could hold them open forever).
DRAIN_AFTER_KILL = 5.0


class _LocalCommand(RunningCommand):
    def __init__(self, proc: asyncio.subprocess.Process, spec: SpawnSpec) -> None:
        self._proc = proc
        self._killed = False
        self._tasks = [
            asyncio.ensure_future(pump(proc.stdout, spec.stdout)),
            asyncio.ensure_future(pump(proc.stderr, spec.stderr)),
        ]
        self._feeder: asyncio.Future[None] | None = None
        if proc.stdin is not None:
            self._feeder = asyncio.ensure_future(feed_stdin(proc.stdin, spec.stdin))
        self._done = asyncio.ensure_future(self._finish())

    async def _finish(self) -> int:
        try:
            await asyncio.gather(*self._tasks)
            if self._feeder is not None and not self._feeder.done():
                await self._reaped()  # output is over; stdin matters until the exit
                await stop_feeding(self._feeder)
        except asyncio.CancelledError:
            if not self._killed:
                raise
            # kill() gave up on the pipes: a process that left the group still holds them.
            # asyncio's Process.wait() resolves only once every pipe has closed, so it would
            # wait for that process; the exit status is known as soon as the child is reaped.
            code = await self._reaped()
            self._release_pipes()
        else:
            code = await self._proc.wait()
        return 128 - code if code < 0 else code

    async def _reaped(self) -> int:
        while self._proc.returncode is None:  # noqa: ASYNC110 - no event fires before the pipes close
            await asyncio.sleep(0.02)
        return self._proc.returncode

    def _release_pipes(self) -> None:
        # The transport owns the pipe file descriptors; closing it closes them (our ends only:
        # the holder keeps its copies). Process exposes no public handle to it.
        transport = getattr(self._proc, "_transport", None)
        if transport is not None:
            transport.close()

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    async def kill(self) -> None:
        self._killed = True
        # After the exit the group may live on (a child still in it) or be gone and its number
        # another process's: signal_group tells the two apart.
        signal_group(self._proc.pid, reaped=self._proc.returncode is not None)
        if self._done.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(self._done), DRAIN_AFTER_KILL)
        except TimeoutError:
            for task in self._tasks:
                task.cancel()
            if self._feeder is not None:
                self._feeder.cancel()


class HostSandbox(Sandbox):
    """The base of both local backends: a host directory, commands as host subprocesses."""

    # The local group kill waits for the pipes to drain; an escaped holder would keep them
    # open for the whole drain bound, so the marked processes go first here.
    _sweep_before_kill = True

    def __init__(self, worktree: str, options: LocalOptions) -> None:
        super().__init__(provider="local", worktree=worktree, name=os.path.basename(worktree))
        self.options = options
        self._session_helper = options.session_helper
        self._env = sandbox_environment(self.secrets.reveal_env(options.env) or {},
                                        options.inherit_env)

    def _wrap(self, line: str, *, die_with_parent: bool = True, tty: bool = False) -> list[str]:
        """The host argv that runs one `sh -c` line (bubblewrap overrides it)."""
        return ["sh", "-c", line]

    def _close_ends_durable(self) -> bool:
        # The worktree goes, but host processes would not go with it.
        return self.options.on_close == "delete"

    async def _spawn(self, spec: SpawnSpec) -> RunningCommand:
        stdin = asyncio.subprocess.PIPE if spec.stdin is not None else asyncio.subprocess.DEVNULL
        env = self._env
        mark = spec.env.get(_run_marks.RUN_ENV)
        if mark is not None:  # marked from the first instruction, not only after the prelude
            env = {**env, _run_marks.RUN_ENV: mark}
        proc = await asyncio.create_subprocess_exec(
            *self._wrap(spec.shell_line()),
            stdin=stdin,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
        return _LocalCommand(proc, spec)

    async def _sweep(self, mark: str) -> None:
        # The sandbox's processes are this host's (under bwrap too: its PID namespace is a
        # child of ours), so /proc here sees them all.
        await _run_marks.host_sweep(mark)

    async def _interactive(self, spec: InteractiveSpec) -> int:
        cmd = self._wrap(spec.shell_line(), tty=spec.tty)
        if spec.tty:
            return await asyncio.to_thread(run_with_pty, cmd, self._env, spec.stdin, spec.stdout)
        return await asyncio.to_thread(
            run_piped, cmd, self._env, spec.stdin, spec.stdout, spec.stderr
        )

    async def _close(self) -> None:
        if self.options.on_close == "delete":
            await asyncio.to_thread(remove_tree, self.worktree)
