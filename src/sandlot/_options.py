"""From a provider factory's keyword arguments to validated options: the factories' one path.

`sandlot.local`, `sandlot.docker` and `sandlot.coder` spell their options out as keyword
parameters (for type checkers and completion) and hand them here unchanged (`locals()`); the
backend's pydantic model is the only source of defaults and rules. A parameter left at None
means "the model's default" (tests/test_factories.py holds every factory's parameters to its
model's fields), and a failure is a `ConfigurationError` in `config_errors`' words, which never
quote a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from .config_errors import invalid

T = TypeVar("T")


def options_from(schema: TypeAdapter[T], given: Mapping[str, Any], *, what: str) -> T:
    """`given` (a factory's arguments) validated by `schema`; None values are left out."""
    data = {key: value for key, value in given.items() if value is not None}
    try:
        return schema.validate_python(data)
    except ValidationError as exc:
        raise invalid(what, exc) from None
