"""The server's durable-process routes: start, list, read from a cursor, signal, remove.

They are `sandbox.processes` over HTTP, so a client that lost its connection (or a new
client) picks a process up again by its id and reads on from its cursor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response

from ..errors import (
    ConfigurationError,
    ProcessNotFoundError,
    ProcessStartError,
    ProcessStillRunningError,
    SandlotError,
)
from ..processes import DurableProcess, DurableProcessInfo
from .models import (
    ProcessOutputResponse,
    ProcessRequest,
    ProcessResponse,
    SignalRequest,
    SignalResponse,
)
from .service import SandboxService

#: Bytes one output read returns at most.
MAX_READ = 1 << 20

T = TypeVar("T")
ErrorFactory = Callable[..., JSONResponse]
Described = Callable[..., dict[int | str, dict[str, Any]]]


def utf8_prefix(data: bytes) -> int:
    """The length of `data` without a UTF-8 character cut off at its end."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return len(data)
        if byte >= 0xC0:  # the lead byte of the last character
            if byte > 0xF4:  # never valid: decoding shows it as U+FFFD anyway
                return len(data)
            need = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return len(data) if back >= need else len(data) - back
    return len(data)


def _info(info: DurableProcessInfo) -> ProcessResponse:
    return ProcessResponse(id=info.id, command=info.command, cwd=info.cwd,
                           started_at=info.started_at, state=info.state,
                           exit_code=info.exit_code, ended_by=info.ended_by,
                           output_bytes=info.output_bytes)


def router(service: SandboxService, error: ErrorFactory, described: Described) -> APIRouter:
    routes = APIRouter(prefix="/processes", tags=["processes"])

    async def guarded(call: Callable[[], Awaitable[T]]) -> T | JSONResponse:
        try:
            return await call()
        except ProcessNotFoundError as exc:
            return error(404, "not_found", str(exc))
        except ProcessStillRunningError as exc:
            return error(409, "still_running", str(exc))
        except (ConfigurationError, ProcessStartError) as exc:
            return error(422, "invalid_request", str(exc))
        except SandlotError as exc:
            return error(503, "sandbox_unavailable", str(exc))

    async def find(process_id: str) -> DurableProcess:
        return await service.sandbox.processes.get(process_id)

    @routes.post("", response_model=ProcessResponse, status_code=201,
                 responses=described(400, 401, 413, 422, 503),
                 summary="Start a durable process (it outlives this request and connection)")
    async def start(request: ProcessRequest) -> ProcessResponse | JSONResponse:
        async def call() -> ProcessResponse:
            process = await service.sandbox.processes.start(
                request.command, cwd=request.cwd, timeout=request.timeout,
                idle_timeout=request.idle_timeout, env=service.settings.env or None)
            return _info(await process.info())

        return await guarded(call)

    @routes.get("", response_model=list[ProcessResponse], responses=described(401, 503),
                summary="Every durable process")
    async def listing() -> list[ProcessResponse] | JSONResponse:
        async def call() -> list[ProcessResponse]:
            return [_info(info) for info in await service.sandbox.processes.list()]

        return await guarded(call)

    @routes.get("/{process_id}", response_model=ProcessResponse,
                responses=described(401, 404, 503), summary="One process")
    async def show(process_id: str) -> ProcessResponse | JSONResponse:
        async def call() -> ProcessResponse:
            return _info(await (await find(process_id)).info())

        return await guarded(call)

    @routes.get("/{process_id}/output", response_model=ProcessOutputResponse,
                responses=described(401, 404, 422, 503), summary="Output from byte `since` on")
    async def output(process_id: str, since: int = 0,
                     max_bytes: int = 64 << 10) -> ProcessOutputResponse | JSONResponse:
        async def call() -> ProcessOutputResponse:
            if not 1 <= max_bytes <= MAX_READ:
                raise ConfigurationError(f"max_bytes must be from 1 to {MAX_READ}")
            scrubber = service.sandbox.secrets.scrubber
            # With secrets, the window reaches the longest secret form further, so whether
            # its last bytes start a secret is always decided (a window smaller than a
            # secret would hand it out piece by piece); the undecided rest is left for the
            # next read (its `since`), which sees it with the bytes that follow.
            window = max_bytes + max(scrubber.longest - 1, 0)
            chunk = await (await find(process_id)).read(since, max_bytes=window)
            keep = len(chunk.data) if chunk.complete else utf8_prefix(chunk.data)
            data = chunk.data[:keep]
            if scrubber:
                data, keep = scrubber.cut(data, final=chunk.complete and keep == len(chunk.data))
            following = chunk.start + keep
            return ProcessOutputResponse(
                text=data.decode("utf-8", "replace"), start=chunk.start,
                next=following, dropped=chunk.dropped,
                complete=chunk.complete and following == chunk.next, process=_info(chunk.info))

        return await guarded(call)

    @routes.post("/{process_id}/signal", response_model=SignalResponse,
                 responses=described(400, 401, 404, 413, 422, 503),
                 summary="Signal the process's group")
    async def send(process_id: str, request: SignalRequest) -> SignalResponse | JSONResponse:
        async def call() -> SignalResponse:
            return SignalResponse(sent=await (await find(process_id)).signal(request.signal))

        return await guarded(call)

    @routes.delete("/{process_id}", status_code=204,
                   responses=described(401, 404, 409, 422, 503),
                   summary="Remove its files (409 while it runs, unless force=true)")
    async def remove(process_id: str, force: bool = False) -> Response:
        async def call() -> Response:
            await (await find(process_id)).remove(force=force)
            return Response(status_code=204)

        result = await guarded(call)
        return result

    return routes
