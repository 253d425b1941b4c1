"""Provider configuration from Python, the CLI, the environment or JSON, in one union.

Each backend's options model carries `type: Literal[...]` as discriminator and builds its
provider lazily, so importing sandlot never imports a backend it does not use.
"""

from __future__ import annotations

import json
import os
from typing import Annotated, Any

from pydantic import Field, TypeAdapter, ValidationError

from .backends.coder import CoderOptions
from .backends.docker.options import DockerOptions
from .backends.local import LocalOptions
from .config_errors import describe
from .errors import ConfigurationError
from .provider import IsolatedSandboxProvider

ProviderConfig = Annotated[
    LocalOptions | DockerOptions | CoderOptions, Field(discriminator="type")
]

_ADAPTER: TypeAdapter[ProviderConfig] = TypeAdapter(ProviderConfig)

#: Environment variable holding a JSON provider configuration (used by `sandlot serve` etc.).
CONFIG_ENV = "SANDLOT_PROVIDER"


def parse_config(data: dict[str, Any] | str) -> ProviderConfig:
    """Validate a provider configuration given as a mapping or a JSON string."""
    try:
        if isinstance(data, str):
            return _ADAPTER.validate_json(data)
        return _ADAPTER.validate_python(data)
    except ValidationError as exc:
        raise ConfigurationError(f"invalid provider configuration: {describe(exc)}") from None


def config_mapping(text: str) -> dict[str, Any]:
    """A JSON provider configuration as a mapping; a typed error that quotes none of it."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(
            f"invalid provider configuration: not valid JSON (at line {exc.lineno} column "
            f"{exc.colno}); check quotes and commas"
        ) from None
    if not isinstance(data, dict):
        raise ConfigurationError(
            'invalid provider configuration: it must be a JSON object, e.g. {"type": "local"}'
        )
    return data


def provider_from_config(data: dict[str, Any] | str) -> IsolatedSandboxProvider:
    """Build a provider from a configuration mapping or JSON string."""
    return parse_config(data).build()


def provider_from_env(default: dict[str, Any] | None = None) -> IsolatedSandboxProvider:
    """Build the provider named by `$SANDLOT_PROVIDER` (JSON), else `default`, else local."""
    raw = os.environ.get(CONFIG_ENV)
    if raw:
        # The variable is named: it is set far from where the error shows.
        try:
            data = config_mapping(raw)
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"${CONFIG_ENV}: {exc}; it must hold a JSON object such as "
                '{"type": "docker"}, or be unset for a local sandbox'
            ) from None
        try:
            return provider_from_config(data)
        except ConfigurationError as exc:
            raise ConfigurationError(f"${CONFIG_ENV}: {exc}") from None
    return provider_from_config(default or {"type": "local", "on_close": "delete"})


def config_schema() -> dict[str, Any]:
    """JSON schema of every provider configuration."""
    return _ADAPTER.json_schema()
