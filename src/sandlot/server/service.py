"""What the HTTP layer calls: one sandbox, one mode, bounded concurrent runs.

Kept free of HTTP so its rules (limits, error mapping inputs) read in one place; `app.py`
turns its outcomes into status codes.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import anyio
import anyio.abc

from ..errors import ConfigurationError, SandlotError
from ..forward import ForwardAddress
from ..modes import Health, RunResult, health, run_code
from ..sandbox import Sandbox
from .models import ExecuteRequest
from .settings import ServerSettings

#: After a run's own timeout, how long the server still waits before giving up on the sandbox
#: (a run's timeout is enforced inside the sandbox; this only guards against a stuck backend).
WATCHDOG_GRACE = 30.0
#: How long a health answer is reused, so a flood of probes costs one round trip.
HEALTH_TTL = 2.0
HEALTH_TIMEOUT = 10.0


class Rejected(Exception):
    """A request the service will not run; `kind` maps to an HTTP status in app.py."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


@dataclass
class HealthState:
    ok: bool
    mode: str
    runtime_version: str
    provider: str


class SandboxService:
    """Runs requests in one sandbox whose mode was fixed when the server started."""

    def __init__(self, sandbox: Sandbox, settings: ServerSettings, report: Health) -> None:
        self.sandbox = sandbox
        self.settings = settings
        sandbox.secrets.add_env(settings.env)
        self.mode = report.mode
        self.runtime_version = report.runtime_version
        self._slots = anyio.Semaphore(settings.max_concurrency)
        self._health_lock = anyio.Lock()
        self._health_at = 0.0
        self._health_ok = True
        self.closing = False
        #: Open forwards by sandbox port, each held open by a task of `group` until its event.
        self.forwards: dict[int, tuple[ForwardAddress, anyio.Event]] = {}
        self.group: anyio.abc.TaskGroup | None = None
        #: Set when the server starts shutting down; runs then get `shutdown_grace` to finish.
        self.stopping = asyncio.Event()

    @classmethod
    async def start(cls, sandbox: Sandbox, settings: ServerSettings) -> SandboxService:
        """Fix the mode: the configured one must have its runtime, else detection must find
        one. Raises `RuntimeNotFoundError` / `UnknownModeError` so start-up fails clearly."""
        report = await health(sandbox, settings.mode)
        return cls(sandbox, settings, report)

    def check(self, request: ExecuteRequest) -> float:
        """Apply the limits that do not need a slot; returns the run's timeout."""
        size = len(request.code)
        if size > self.settings.max_code_chars:
            raise Rejected(
                "invalid",
                f"code is {size} characters; this server accepts at most "
                f"{self.settings.max_code_chars}",
            )
        if len(request.requirements) > self.settings.max_requirements:
            raise Rejected(
                "invalid",
                f"{len(request.requirements)} requirements; this server accepts at most "
                f"{self.settings.max_requirements}",
            )
        timeout = request.timeout if request.timeout is not None else self.settings.default_timeout
        if timeout > self.settings.max_timeout:
            raise Rejected(
                "invalid",
                f"timeout {timeout:g}s exceeds this server's maximum of "
                f"{self.settings.max_timeout:g}s; ask for less",
            )
        return timeout

    async def execute(self, request: ExecuteRequest) -> RunResult:
        """Run one request, or raise `Rejected` / a `SandlotError` (mapped by app.py)."""
        timeout = self.check(request)
        if self.closing or self.sandbox.closed:
            raise Rejected("unavailable", "the server is shutting down; retry elsewhere")
        try:
            self._slots.acquire_nowait()
        except anyio.WouldBlock:
            raise Rejected(
                "busy",
                f"{self.settings.max_concurrency} runs are already in progress (the server's "
                "limit); retry shortly",
            ) from None
        try:
            with anyio.move_on_after(timeout + WATCHDOG_GRACE):
                return await run_code(
                    self.sandbox,
                    request.code,
                    mode=self.mode,
                    requirements=request.requirements,
                    timeout=timeout,
                    max_output=self.settings.max_output,
                    env=self.settings.env or None,
                    scrub=True,
                )
            raise Rejected(
                "stuck",
                f"the sandbox did not answer within {timeout + WATCHDOG_GRACE:g}s although the "
                "run's timeout had passed; the backend may be unresponsive",
            )
        except ConfigurationError as exc:
            raise Rejected("invalid", str(exc)) from None
        finally:
            self._slots.release()

    async def health(self) -> HealthState:
        """Probe the sandbox (at most once per HEALTH_TTL, whatever the request rate)."""
        async with self._health_lock:
            if time.monotonic() - self._health_at > HEALTH_TTL:
                self._health_ok = await self._probe()
                self._health_at = time.monotonic()
        return HealthState(
            ok=self._health_ok and not self.closing,
            mode=self.mode,
            runtime_version=self.runtime_version,
            provider=self.sandbox.provider,
        )

    async def _probe(self) -> bool:
        if self.closing or self.sandbox.closed:
            return False
        try:
            with anyio.fail_after(HEALTH_TIMEOUT):
                report = await health(self.sandbox, self.mode)
        except (SandlotError, TimeoutError):
            return False
        return report.mode == self.mode

    # ---- forwards ---------------------------------------------------------------------------

    async def open_forward(self, port: int) -> ForwardAddress:
        """Forward sandbox `port` to 127.0.0.1 of this host (the same one when already open)."""
        if port in self.forwards:
            return self.forwards[port][0]
        if self.group is None or self.closing:
            raise Rejected("unavailable", "the server is shutting down")
        stop = anyio.Event()
        address: ForwardAddress = await self.group.start(self._hold_forward, port, stop)
        self.forwards[port] = (address, stop)
        return address

    async def _hold_forward(self, port: int, stop: anyio.Event,
                            task_status: anyio.abc.TaskStatus[ForwardAddress]) -> None:
        async with self.sandbox.forward_port(port) as address:
            task_status.started(address)
            await stop.wait()

    def close_forward(self, port: int) -> bool:
        held = self.forwards.pop(port, None)
        if held is None:
            return False
        held[1].set()
        return True
