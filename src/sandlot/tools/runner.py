"""Run one tool script in the sandbox and keep its stdout as BYTES, bounded from the head.

`Sandbox.exec` decodes output (lossily) and keeps the tail, which suits commands but not file
tools: an edit must write back the exact bytes it read, and a search result is read from the
top. So tools spawn through the same backend hook `transfer.py` uses, with their own sinks.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import _shell
from .._engine import SpawnSpec, engine_of
from ..output import OutputCapture

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
