"""The server's limits and binding, from flags or the environment."""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel, ConfigDict, Field, SecretStr, model_validator

from ..errors import ConfigurationError
from ..secrets import EnvText
from .models import TIMEOUT_CAP

#: Environment variable holding the bearer token.
TOKEN_ENV = "SANDLOT_TOKEN"


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class ServerSettings(BaseModel):
    """How `sandlot serve` binds and what it accepts."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    """Address to bind; anything but loopback requires `token`."""
    port: int = Field(default=8080, ge=0, le=65535)
    """TCP port (0: any free port, printed at start-up)."""
    token: SecretStr | None = None
    """Bearer token every request must carry (`Authorization: Bearer <token>`)."""
    env: dict[str, EnvText] = Field(default_factory=dict)
    """Environment of every run; `Secret` values are scrubbed from every response."""
    mode: str | None = None
    """Runtime mode; None: `$SANDLOT_MODE`, else detected in the sandbox at start-up."""
    max_body_bytes: int = Field(default=1 << 20, gt=0)
    """Largest request body accepted (413 beyond)."""
    max_code_chars: int = Field(default=256 << 10, gt=0)
    """Longest `code` accepted, in characters (422 beyond; stated as maxLength in the OpenAPI
    document). The body limit bounds the bytes."""
    default_timeout: float = Field(default=30.0, gt=0, le=TIMEOUT_CAP)
    """Timeout of a run whose request names none, in seconds."""
    max_timeout: float = Field(default=300.0, gt=0, le=TIMEOUT_CAP)
    """Largest timeout a request may ask for (422 beyond)."""
    max_concurrency: int = Field(default=4, ge=1)
    """Runs at the same time; a request beyond gets 429 at once, never a wait."""
    max_connections: int = Field(default=64, ge=1)
    """Requests in flight before the server answers 503 (idle connections do not count)."""
    header_timeout: float = Field(default=10.0, gt=0)
    """Seconds a new connection has to send a complete request head before it is closed."""
    body_timeout: float = Field(default=30.0, gt=0)
    """Seconds a request's body may take to arrive (408 beyond)."""
    max_output: int = Field(default=1 << 20, ge=0)
    """Bytes of stdout and of stderr kept per run (the tail; `truncated` says when cut)."""
    max_requirements: int = Field(default=32, ge=0)
    """Requirements per request."""
    shutdown_grace: float = Field(default=10.0, ge=0)
    """On SIGTERM, how long running requests may finish before they are ended."""
    log_level: str = "info"
    allowed_hosts: list[str] = Field(default_factory=list)
    """Host header values accepted besides loopback names (`name` or `name:port`), e.g. the
    name a reverse proxy forwards; only checked without a token (adr/0032)."""
    allowed_origins: list[str] = Field(default_factory=list)
    """Origins (`scheme://host[:port]`) accepted besides pages on loopback names."""

    @model_validator(mode="after")
    def _consistent(self) -> ServerSettings:
        if self.default_timeout > self.max_timeout:
            raise ValueError(
                f"default_timeout ({self.default_timeout}) exceeds max_timeout "
                f"({self.max_timeout}); lower it or raise max_timeout"
            )
        return self

    def check_binding(self) -> None:
        """Refuse to expose an unauthenticated code runner beyond this machine."""
        if not is_loopback(self.host) and (self.token is None or not self.token.get_secret_value()):
            raise ConfigurationError(
                f"binding {self.host} exposes the server beyond this machine: set a bearer "
                f"token in ${TOKEN_ENV} first (or bind 127.0.0.1)"
            )
        if self.token is not None and len(self.token.get_secret_value()) < 16:
            raise ConfigurationError(
                f"${TOKEN_ENV} is too short: use at least 16 random characters, e.g. "
                "`python3 -c 'import secrets; print(secrets.token_urlsafe(32))'`"
            )
