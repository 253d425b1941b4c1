"""Run one tool script in the sandbox and keep its stdout as BYTES, bounded from the head.

`Sandbox.exec` decodes output (lossily) and keeps the tail, which suits commands but not file
tools: an edit must write back the exact bytes it read, and a search result is read from the
top. So tools spawn through the same backend hook `transfer.py` uses, with their own sinks.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import _shell
from .._engine import SpawnSpec, engine_of
from .._session.client import HelperLost, HelperUnavailable, session_for
from ..errors import ToolError
from ..output import OutputCapture

log = logging.getLogger("sandlot.tools")

if TYPE_CHECKING:
    from ..sandbox import Sandbox


class HeadCapture:
    """Keeps the first `limit` bytes of a stream; notes whether more came."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()
        self.truncated = False

    async def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) > room:
            self.truncated = True
            chunk = chunk[: max(room, 0)]
        self.data += chunk


@dataclass(frozen=True)
class ScriptResult:
    """What a tool script left: exit code, raw stdout (head), stderr text (tail)."""

    exit_code: int
    stdout: bytes
    stderr: str
    truncated: bool
    timed_out: bool

    @property
    def detail(self) -> str:
        """The last stderr line: our scripts put the failing path or value there."""
        lines = [line for line in self.stderr.splitlines() if line.strip()]
        return lines[-1] if lines else ""


async def run_script(
    sandbox: Sandbox,
    script: str,
    args: Sequence[str],
    *,
    name: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | AsyncIterable[bytes] | None = None,
    timeout: float | None = None,
    limit: int = 1 << 20,
) -> ScriptResult:
    """Run `sh -c script name args...` in the sandbox; one round trip."""
    engine = engine_of(sandbox)
    engine.ensure_open()
    out = HeadCapture(limit)
    err = OutputCapture(16 << 10)

    async def err_sink(data: bytes) -> None:
        err.feed(data)

    spec = SpawnSpec(
        argv=_shell.to_argv(["sh", "-c", script, f"sandlot-{name}", *args]),
        cwd="/",
        env=_shell.validate_env(env),
        sudo=False,
        stdin=stdin,
        stdout=out.feed,
        stderr=err_sink,
        display=f"sandlot tool {name}",
    )
    code, fired = await engine.run(spec, timeout=timeout)
    err.close()
    return ScriptResult(code, bytes(out.data), err.text(), out.truncated, fired is not None)


async def run_in_session(
    sandbox: Sandbox,
    argv: Sequence[str],
    *,
    name: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | AsyncIterable[bytes] | None = None,
    timeout: float | None = None,
    limit: int = 1 << 20,
) -> ScriptResult | None:
    """The race-free helper's operation `argv` (SCRIPT OP ROOT TARGET ...) served by the
    sandbox's session helper: the same output and exit code as `python3 -c safe_helper.py
    argv`, without a process start. None when the session cannot serve it (off, no usable
    python3, or lost during this call with input that can be sent again): the caller then
    runs the one-command path. A lost call whose input was a stream fails with ToolError."""
    return await run_op_in_session(sandbox, "tool", {"argv": list(argv)}, name=name, env=env,
                                   stdin=stdin, timeout=timeout, limit=limit)


async def run_op_in_session(
    sandbox: Sandbox,
    op: str,
    args: Mapping[str, object],
    *,
    name: str,
    env: Mapping[str, str] | None = None,
    stdin: bytes | AsyncIterable[bytes] | None = None,
    timeout: float | None = None,
    limit: int = 1 << 20,
) -> ScriptResult | None:
    """The session helper's operation `op` (its RESULT a `code`, its stdout the DATA), as a
    ScriptResult; None when the session cannot serve it, as for `run_in_session`."""
    engine = engine_of(sandbox)
    engine.ensure_open()
    if not engine.session_helper:
        return None
    session = session_for(engine, _shell.validate_env(env))
    out = HeadCapture(limit)

    async def on_data(channel: int, data: bytes) -> None:
        if channel == 1:
            await out.feed(data)

    try:
        result = await session.run(op, dict(args), stdin=stdin, on_data=on_data,
                                   timeout=timeout)
    except HelperUnavailable:
        return None
    except HelperLost as lost:
        if stdin is None or isinstance(stdin, bytes):
            log.warning("sandbox %s: %s during %s; running it as one command", sandbox.name,
                        lost, name)
            return None
        raise ToolError(f"{name}: the sandbox's session helper was lost during the call "
                        f"({lost}); the call may not have completed, run it again") from None
    if result is None:
        return ScriptResult(124, bytes(out.data), "", out.truncated, True)
    code = result.get("code")
    if not isinstance(code, int):
        return ScriptResult(1, bytes(out.data), str(result.get("error", ""))[-4000:],
                            out.truncated, False)
    stderr = result.get("stderr")
    return ScriptResult(code, bytes(out.data), stderr if isinstance(stderr, str) else "",
                        out.truncated, False)
