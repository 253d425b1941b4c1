"""The FastAPI application: execute, health, forwards and durable processes over a
`SandboxService`.

The app does not own the sandbox: whoever made the service (see `runner.SandboxServer`)
closes it, so the same app serves tests, `sandlot serve` and embedding alike.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..config_errors import describe
from ..errors import (
    ProviderError,
    RequirementsInstallError,
    RuntimeNotFoundError,
    SandboxClosed,
    SandlotError,
)
from ..forward import ForwardAddress
from . import processes
from .middleware import ActiveRequests, BearerAuth, BodyLimit, ShutdownDeadline
from .models import (
    ErrorResponse,
    ExecuteRequest,
    ExecuteResponse,
    ForwardRequest,
    ForwardResponse,
    HealthResponse,
)
from .origin import HostOriginGuard
from .service import Rejected, SandboxService

#: Service outcome -> HTTP status.
STATUS = {
    "invalid": 422,
    "too_large": 413,
    "busy": 429,
    "unavailable": 503,
    "stuck": 504,
}
ERROR_CODE = {
    "invalid": "invalid_request",
    "too_large": "too_large",
    "busy": "too_many_requests",
    "unavailable": "unavailable",
    "stuck": "sandbox_unresponsive",
}


def _error(status: int, error: str, detail: str, **extra: Any) -> JSONResponse:
    body = ErrorResponse(error=error, detail=detail, **extra).model_dump(exclude_none=True)
    headers = {"Retry-After": "1"} if status in (429, 503) else None
    return JSONResponse(body, status_code=status, headers=headers)


def _described(*codes: int) -> dict[int | str, dict[str, Any]]:
    words = {
        400: "The body could not be read as JSON text.",
        401: "Missing or wrong bearer token (only when the server has a token).",
        404: "Nothing by that name (e.g. no forward of that port is open).",
        409: "The process still runs (remove it with force=true, or signal it first).",
        413: "Request body larger than the server accepts.",
        422: "Invalid request (including code, requirements or timeout beyond this server's "
        "limits), or installing the requirements failed (error "
        "'requirements_install_failed', with the installer's stderr).",
        429: "The server's limit of concurrent runs is reached; retry after a moment.",
        503: "The server is shutting down or its sandbox is unavailable (or a durable "
        "process's files could not be read).",
        504: "The sandbox did not answer although the run's timeout had passed.",
    }
    return {code: {"model": ErrorResponse, "description": words[code]} for code in codes}


def create_app(service: SandboxService) -> FastAPI:
    """The ASGI app for one running `SandboxService`."""
    settings = service.settings
    app = FastAPI(
        title="sandlot sandbox server",
        version="1",
        description="Runs submitted code in a sandbox, in the runtime of the server's mode "
        f"(this one: {service.mode}). The contract is the same in every mode and on every "
        "backend.",
    )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        # FastAPI's own refusals (a body that is not UTF-8 JSON, an unknown route) in the
        # server's one error shape.
        code = {400: "invalid_request", 404: "not_found", 405: "method_not_allowed"}
        return _error(exc.status_code, code.get(exc.status_code, "http_error"), str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        # The body's own location part says nothing; the renderer never quotes a value.
        errors = [{**e, "loc": tuple(p for p in e.get("loc", ()) if p != "body") or ("body",)}
                  for e in exc.errors()]
        return _error(422, "invalid_request", describe(errors) or "invalid request")

    @app.post(
        "/execute",
        response_model=ExecuteResponse,
        responses=_described(400, 401, 413, 422, 429, 503, 504),
        summary="Run code in the server's mode",
    )
    async def execute(request: ExecuteRequest) -> ExecuteResponse | JSONResponse:
        try:
            result = await service.execute(request)
        except Rejected as exc:
            return _error(STATUS[exc.kind], ERROR_CODE[exc.kind], exc.detail)
        except RequirementsInstallError as exc:
            return _error(
                422,
                "requirements_install_failed",
                str(exc).split("\nstderr (tail):", 1)[0],
                installer=exc.installer,
                exit_code=exc.exit_code,
                stderr=exc.stderr,
            )
        except (SandboxClosed, ProviderError, RuntimeNotFoundError) as exc:
            return _error(503, "sandbox_unavailable", str(exc))
        except SandlotError as exc:
            return _error(503, "sandbox_error", str(exc))
        return ExecuteResponse(
            stdout=result.stdout,
            stderr=result.stderr,
            exit_code=result.exit_code,
            duration_ms=round(result.duration * 1000),
            timed_out=result.timed_out,
            truncated=result.truncated,
        )

    @app.get(
        "/health",
        response_model=HealthResponse,
        responses={
            **_described(401),
            503: {"model": HealthResponse, "description": "The sandbox does not answer."},
        },
        summary="The server's mode, runtime version and provider",
    )
    async def health() -> HealthResponse | JSONResponse:
        state = await service.health()
        body = HealthResponse(
            status="ok" if state.ok else "unavailable",
            mode=state.mode,
            runtime_version=state.runtime_version,
            provider=state.provider,
        )
        if not state.ok:
            return JSONResponse(body.model_dump(), status_code=503)
        return body

    def _forward(address: ForwardAddress) -> ForwardResponse:
        return ForwardResponse(port=address.remote_port, host=address.host,
                               host_port=address.port, url=address.url)

    @app.post(
        "/forwards",
        response_model=ForwardResponse,
        responses=_described(401, 422, 503),
        summary="Reach a port inside the sandbox from the server's host (127.0.0.1)",
    )
    async def open_forward(request: ForwardRequest) -> ForwardResponse | JSONResponse:
        try:
            address = await service.open_forward(request.port)
        except Rejected as exc:
            return _error(STATUS[exc.kind], ERROR_CODE[exc.kind], exc.detail)
        except SandlotError as exc:
            return _error(503, "forward_unavailable", str(exc))
        return _forward(address)

    @app.get("/forwards", response_model=list[ForwardResponse], responses=_described(401),
             summary="The open forwards")
    async def list_forwards() -> list[ForwardResponse]:
        return [_forward(address) for address, _ in service.forwards.values()]

    @app.delete("/forwards/{port}", status_code=204, responses=_described(401, 404),
                summary="Close the forward of a sandbox port")
    async def close_forward(port: int) -> Response:
        if not service.close_forward(port):
            return _error(404, "not_found", f"no forward of sandbox port {port} is open")
        return Response(status_code=204)

    app.include_router(processes.router(service, _error, _described))

    app.add_middleware(
        BodyLimit, limit=settings.max_body_bytes, read_timeout=settings.body_timeout
    )
    if settings.token is not None:
        # Added last, so it runs first: an unauthenticated request is refused before its
        # body is read.
        app.add_middleware(BearerAuth, token=settings.token.get_secret_value())
    # Before the token check: a foreign page is refused whatever it sends (adr/0032).
    app.add_middleware(
        HostOriginGuard, check_host=settings.token is None,
        allowed_hosts=settings.allowed_hosts, allowed_origins=settings.allowed_origins,
    )  # fmt: skip
    app.add_middleware(
        ShutdownDeadline, grace=settings.shutdown_grace, stopping=service.stopping
    )
    # Outermost: counts every request in flight, authorized or not, before any work.
    app.add_middleware(ActiveRequests, limit=settings.max_connections)
    _document_this_server(app, service)
    return app


def _document_this_server(app: FastAPI, service: SandboxService) -> None:
    """State this server's own limits and auth in its OpenAPI document, so a client (or a
    fuzzer) can tell a valid request from one this server will refuse."""
    original = app.openapi
    settings = service.settings

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = original()
            fields = schema["components"]["schemas"]["ExecuteRequest"]["properties"]
            fields["code"]["maxLength"] = settings.max_code_chars
            fields["requirements"]["maxItems"] = settings.max_requirements
            for option in fields["timeout"].get("anyOf", [fields["timeout"]]):
                if option.get("type") == "number":
                    option["maximum"] = settings.max_timeout
            if settings.token is not None:
                schema["components"]["securitySchemes"] = {
                    "bearer": {"type": "http", "scheme": "bearer"}
                }
                schema["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
