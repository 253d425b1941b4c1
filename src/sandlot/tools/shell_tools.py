"""The shell tools: bash (foreground or background), run_code, bash_output, kill_shell."""

from __future__ import annotations

from ..errors import ProcessNotFoundError, ToolError
from ..sandbox import ExecResult
from .base import ToolboxBase
from .models import BashOutputResult, BashResult, KillShellResult, RunCodeResult, SecretEnvResult
from .shells import Shell


def _quote_list(names: list[str]) -> str:
    return ", ".join(names) if names else "none"


class ShellTools(ToolboxBase):
    """Commands in the sandbox: their output, how they ended, background shells."""

    async def bash(self, command: str, timeout: float | None = None, background: bool = False,
                   *, workspace: str | None = None, idle_timeout: float | None = None,
                   secrets: list[str] | None = None) -> BashResult:
        """Run `command` with `sh -c` in the workspace root (foreground or background)."""
        self._mutating("bash")
        if not command or not command.strip():
            raise ToolError("bash: command is empty")
        for name, value in (("timeout", timeout), ("idle_timeout", idle_timeout)):
            if value is not None and value <= 0:
                raise ToolError(f"bash: {name} must be a positive number of seconds, got {value}")
        ws = self.workspaces.choose(workspace)
        env = self._command_env("bash", secrets)
        if background:
            # A durable process: it survives a dropped connection, and a toolbox attached to
            # the same sandbox later finds it by its id.
            process = await self.sandbox.processes.start(
                command, cwd=ws.root, env=env, timeout=timeout, idle_timeout=idle_timeout)
            shell = self.shells.add(Shell(process, command, ws.name))
            return BashResult(
                tool="bash", workspace=ws.name, command=command, exit_code=None, stdout="",
                stderr="", shell_id=shell.id,
                text=f"Started background shell {shell.id} in workspace {ws.name}. Read its "
                     f'output with bash_output(shell_id="{shell.id}"); end it with '
                     f'kill_shell(shell_id="{shell.id}").')
        limit = timeout if timeout is not None else self.bash_timeout
        result = await self.sandbox.exec(command, cwd=ws.root, env=env, timeout=limit,
                                         idle_timeout=idle_timeout,
                                         max_output=self.bash_output_bytes,
                                         on_stdout=self.on_output, on_stderr=self.on_output,
                                         scrub=True)
        return BashResult(tool="bash", text=self._render_run(result, limit), workspace=ws.name,
                          command=command, exit_code=result.exit_code, stdout=result.stdout,
                          stderr=result.stderr, timed_out=result.timed_out,
                          truncated=result.truncated)

    async def run_code(self, code: str, mode: str | None = None,
                       requirements: list[str] | None = None,
                       timeout: float | None = None) -> RunCodeResult:
        """sandlot.modes.run_code: `code` in a fresh file, run in its runtime mode."""
        self._mutating("run_code")
        from .. import modes

        limit = timeout if timeout is not None else self.bash_timeout
        result = await modes.run_code(self.sandbox, code, mode, requirements or (), limit,
                                      env=self.env, max_output=self.bash_output_bytes,
                                      on_stdout=self.on_output, on_stderr=self.on_output,
                                      scrub=True)
        text = self._render_run(result, limit)
        if result.notes:
            text += "\n" + "\n".join(f"[note: {note}]" for note in result.notes)
        return RunCodeResult(tool="run_code", text=text, mode=result.mode,
                             exit_code=result.exit_code, stdout=result.stdout,
                             stderr=result.stderr, timed_out=result.timed_out,
                             truncated=result.truncated, notes=list(result.notes))

    def _render_run(self, result: ExecResult, limit: float) -> str:
        """A finished command as the model reads it: output tails, then how it ended."""
        parts: list[str] = []
        if result.stdout_truncated:
            parts.append(f"[stdout cut: showing its last {self.bash_output_bytes} bytes]")
        if result.stdout:
            parts.append(result.stdout.rstrip("\n"))
        if result.stderr:
            if result.stderr_truncated:
                parts.append(f"[stderr cut: showing its last {self.bash_output_bytes} bytes]")
            parts.append("[stderr]\n" + result.stderr.rstrip("\n"))
        if result.timed_out_by == "idle_timeout":
            parts.append("[no output for its idle_timeout; the command and everything it "
                         "started were ended]")
        elif result.timed_out:
            parts.append(f"[timed out after {limit:g}s; the command and everything it started "
                         "were ended]")
        else:
            parts.append(f"[exit code {result.exit_code}]")
        return "\n".join(parts)

    async def _shell(self, tool: str, shell_id: str) -> Shell:
        if not isinstance(shell_id, str):
            raise ToolError(f"{tool}: shell_id must be a string")
        shell = self.shells.get(shell_id)
        if shell is not None:
            return shell
        try:  # started by another toolbox on this sandbox (before a restart, say)
            process = await self.sandbox.processes.get(shell_id)
            info = await process.info()
        except ProcessNotFoundError:
            raise ToolError(f'{tool}: no background shell "{shell_id.strip()}"; known shells: '
                            f"{_quote_list(self.shells.ids)}") from None
        return self.shells.add(Shell(process, info.command, ""))

    async def bash_output(self, shell_id: str) -> BashOutputResult:
        """What a background shell printed since the last call, and whether it still runs."""
        self._mutating("bash_output")
        shell = await self._shell("bash_output", shell_id)
        scrubber = self.scrubber
        # With secrets the read reaches the longest secret form further, so whether its last
        # bytes start a secret is always decided; what could still be one is read again next
        # time, with the bytes that follow it.
        window = self.bash_output_bytes + max(scrubber.longest - 1, 0)
        chunk = await shell.process.read(shell.cursor, max_bytes=window)
        shell.cursor = chunk.next
        more = chunk.next < chunk.info.output_bytes
        data = chunk.data
        if scrubber:
            data, used = scrubber.cut(data, final=chunk.complete)
            shell.cursor = chunk.next - (len(chunk.data) - used)
        output = shell.decoder.decode(data, final=chunk.complete)
        status = shell.status(chunk.info)
        code = chunk.info.exit_code
        lines = [output.rstrip("\n")] if output else ["(no new output)"]
        if chunk.dropped:
            lines.insert(0, f"[{chunk.dropped} earlier bytes dropped: the shell's output files "
                            "keep only its newest output]")
        if more:
            lines.append("[more output is waiting: call bash_output again]")
        tail = f", exit code {code}" if code is not None else ""
        lines.append(f"[shell {shell.id}: {status}{tail}]")
        return BashOutputResult(tool="bash_output", text="\n".join(lines), shell_id=shell.id,
                                status=status, exit_code=code, output=output,
                                dropped_bytes=chunk.dropped, more=more)

    async def kill_shell(self, shell_id: str) -> KillShellResult:
        """End a background shell's whole process tree (harmless if it already ended)."""
        self._mutating("kill_shell")
        shell = await self._shell("kill_shell", shell_id)
        info = await shell.process.info()
        if info.running:
            shell.killed = True
            info = await shell.process.kill()
        status = shell.status(info)
        return KillShellResult(tool="kill_shell", shell_id=shell.id, status=status,
                               exit_code=info.exit_code,
                               text=f"Shell {shell.id} {status} (exit code {info.exit_code})")

    async def secret_env(self) -> SecretEnvResult:
        """The configured secret names an agent can pass as `secrets=[...]`."""
        names = sorted(self.secrets)
        listing = ", ".join(names) if names else "none"
        return SecretEnvResult(
            tool="secret_env", names=names,
            text=f"Configured secrets: {listing}. Pass secrets=[NAME, ...] to bash or a verify "
                 "tool to have each in the command's environment as $NAME; output that holds "
                 "a value shows [secret:NAME] instead.")
