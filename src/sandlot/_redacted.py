"""A pydantic base whose repr (and str) never shows an environment value.

Options carry `env` mappings, and env values are where users put API keys; a provider's repr
lands in logs, tracebacks and debugger views. The names stay (they say what is set); each value
shows as `***`. Session tokens are `SecretStr` already.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

#: Fields whose mapping values are hidden in reprs.
REDACTED_FIELDS = frozenset({"env"})


class RedactedModel(BaseModel):
    """`BaseModel` with `env`'s values masked in `repr()` and `str()`."""

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            if name in REDACTED_FIELDS and isinstance(value, Mapping):
                yield name, {key: "***" for key in value}
            else:
                yield name, value
