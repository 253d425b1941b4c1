"""An async client for the sandbox server, with typed results and typed errors.

    async with SandboxClient("http://127.0.0.1:8080", token=token) as client:
        result = await client.execute("print('hi')", requirements=["six"])
        print(result.stdout, result.exit_code)

Errors (all `ServerRequestError`, from sandlot.errors): `ServerAuthError` (401),
`ServerRateLimitedError` (429) and `ServerUnavailableError` (503) -- both `ServerBusyError` with
`retry_after` --, `ServerRejectedError` (413/422), `ServerInstallError` (the requirements did not
install), `ServerTimeoutError` (no answer in time, or 504), `ServerUnreachableError`
(connection refused). A program that fails is not an error: see `exit_code` and `stderr`.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from ..errors import (
    ConfigurationError,
    InvalidTokenError,
    ServerAuthError,
    ServerInstallError,
    ServerRateLimitedError,
    ServerRejectedError,
    ServerRequestError,
    ServerTimeoutError,
    ServerUnavailableError,
    ServerUnreachableError,
    register_secret,
)
from .models import ExecuteResponse, HealthResponse

#: Beyond the run's own timeout, how long the client waits for the server's answer.
ANSWER_MARGIN = 30.0

M = TypeVar("M", bound=BaseModel)


class SandboxClient:
    """Talks to one sandlot sandbox server. Use as an async context manager (or `aclose()`)."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str | None = None,
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """`timeout` is the HTTP timeout of calls that name no run timeout; `transport` lets
        tests (or a unix socket) replace the network."""
        headers = {"Accept": "application/json"}
        if token:
            register_secret(token)
            _check_token(token)
            headers["Authorization"] = f"Bearer {token}"
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        try:
            self._http = httpx.AsyncClient(
                base_url=self.base_url, headers=headers, timeout=timeout, transport=transport
            )
        except httpx.InvalidURL as exc:
            raise ConfigurationError(
                f"{self.base_url!r} is not a valid server URL ({exc}); expected "
                "http://HOST:PORT as `sandlot serve` prints it"
            ) from None

    def __repr__(self) -> str:
        return f"<SandboxClient {self.base_url}>"  # never the token

    async def __aenter__(self) -> SandboxClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def execute(
        self, code: str, requirements: Sequence[str] = (), timeout: float | None = None
    ) -> ExecuteResponse:
        """Run `code` in the server's mode; returns stdout, stderr, exit_code and timing."""
        body: dict[str, Any] = {"code": code, "requirements": list(requirements)}
        if timeout is not None:
            body["timeout"] = timeout
        # The server may take the whole run timeout before answering. Without one, the run
        # gets the server's default timeout, which the client does not know: `self.timeout`.
        wait = self.timeout if timeout is None else max(self.timeout, timeout + ANSWER_MARGIN)
        return await self._call("POST", "/execute", ExecuteResponse, json=body, wait=wait)

    async def health(self) -> HealthResponse:
        """The server's mode, runtime version and provider; raises when it is unavailable."""
        return await self._call("GET", "/health", HealthResponse, wait=self.timeout)

    async def _call(
        self, method: str, path: str, model: type[M], *, wait: float, json: Any = None
    ) -> M:
        url = f"{self.base_url}{path}"
        try:
            response = await self._http.request(method, path, json=json, timeout=wait)
        except httpx.TimeoutException as exc:
            raise ServerTimeoutError(
                f"{method} {url}: no answer within {wait:g}s ({type(exc).__name__}); raise the "
                "client timeout or check the server",
                url=url,
            ) from None
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError) as exc:
            raise ServerUnreachableError(
                f"{method} {url}: cannot reach the server ({exc or type(exc).__name__}); is "
                "`sandlot serve` running there?",
                url=url,
            ) from None
        except httpx.HTTPError as exc:
            # Anything else httpx raises (a protocol error, a bad URL) may quote the request's
            # headers, the bearer token among them: name the error's type only.
            raise ServerRequestError(
                f"{method} {url}: the request failed ({type(exc).__name__})", url=url
            ) from None
        if response.status_code == 200:
            try:
                return model.model_validate_json(response.content)
            except ValidationError as exc:
                raise ServerRequestError(
                    f"{method} {url}: the answer is not a sandlot {model.__name__}: {exc}",
                    status=200,
                    url=url,
                ) from None
        raise _error(method, url, response)


def _check_token(token: str) -> None:
    """Refuse a token an HTTP header cannot carry, before any request quotes it in an error."""
    for position, char in enumerate(token):
        if not (char.isascii() and char.isprintable()) or char.isspace():
            where = "at its end" if position == len(token) - 1 else f"at position {position}"
            if position == 0:
                where = "at its start"
            raise InvalidTokenError(
                f"the server token has a whitespace, control or non-ASCII character {where}; "
                "pass the token exactly as `sandlot serve` has it (e.g. strip a trailing newline "
                "read from a file)"
            )


def _error(method: str, url: str, response: httpx.Response) -> ServerRequestError:
    status = response.status_code
    try:
        payload = response.json()
    except ValueError:
        payload = None
    body: dict[str, Any] = payload if isinstance(payload, dict) else {}
    code = str(body.get("error") or "")
    detail = str(body.get("detail") or body.get("status") or response.text[:500] or "")
    message = f"{method} {url}: HTTP {status}" + (f" ({code})" if code else "") + f": {detail}"
    retry = _retry_after(response)
    if status == 401:
        return ServerAuthError(message, status=status, error=code, url=url)
    if status == 429:
        return ServerRateLimitedError(
            message, status=status, error=code, url=url, retry_after=retry
        )
    if status == 503:
        return ServerUnavailableError(
            message, status=status, error=code, url=url, retry_after=retry
        )
    if status == 504:
        return ServerTimeoutError(message, status=status, error=code, url=url)
    if status == 422 and code == "requirements_install_failed":
        exit_code = body.get("exit_code")
        return ServerInstallError(
            message,
            installer=str(body.get("installer") or ""),
            exit_code=exit_code if isinstance(exit_code, int) else None,
            stderr=str(body.get("stderr") or ""),
            url=url,
        )
    if status in (400, 413, 422):
        return ServerRejectedError(message, status=status, error=code, url=url)
    return ServerRequestError(message, status=status, error=code, url=url)


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["retry-after"])
    except (KeyError, ValueError):
        return None
