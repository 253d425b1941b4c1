"""`Secret`: a value a command needs but nobody may read back.

Not a `str` subclass on purpose: a subclass leaks through every path that copies the raw
characters (`json.dumps`, concatenation, `.encode()`, `"%s" %`), and the code that leaks it is
rarely the code that made it. A `Secret` shows as `[secret:NAME]` wherever Python turns it
into text (repr, str, f-strings, `format`, pydantic dumps); the value leaves only through
`reveal()`, which sandlot calls at the one place it hands env values to a backend.
"""

from __future__ import annotations

import hmac
import re
from typing import Annotated, Any

from pydantic import (
    GetCoreSchemaHandler,
    GetJsonSchemaHandler,
    PlainSerializer,
    PlainValidator,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

from ..errors import ConfigurationError

#: What a secret's name may hold: it is printed inside `[secret:NAME]`.
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME.match(name):
        raise ConfigurationError(
            f"secret name {name!r} is not valid: use letters, digits, _, . or - (starting with "
            "a letter or _), at most 64 characters"
        )
    return name


def marker(name: str | None) -> str:
    """What stands in for a secret's value in every output."""
    return f"[secret:{name or 'unnamed'}]"


class Secret:
    """A str-like value that never shows itself: `Secret(os.environ["TOKEN"], name="TOKEN")`.

    Pass it wherever an environment value goes (`exec(env=...)`, `start`, durable processes,
    a provider's `env`, `Toolbox(env=...)`, fan-out): the command gets the real value, and the
    sandbox scrubs it (and its base64, URL and JSON forms) from what it hands back to a model
    or a person. `name` defaults to the environment variable it is first passed as.
    """

    __slots__ = ("_name", "_value")
    _name: str | None
    _value: str

    def __init__(self, value: str | Secret, name: str | None = None) -> None:
        if isinstance(value, Secret):
            name = name if name is not None else value._name
            value = value._value
        if not isinstance(value, str):
            raise ConfigurationError(
                f"Secret takes a str value, got {type(value).__name__}; decode bytes first"
            )
        if not value:
            raise ConfigurationError("Secret value is empty; an empty secret cannot be scrubbed")
        if "\0" in value:
            raise ConfigurationError("Secret value contains a NUL byte, which no environment "
                                     "variable can hold")
        self._value = value
        self._name = check_name(name) if name is not None else None

    @property
    def name(self) -> str | None:
        return self._name

    def named(self, name: str) -> Secret:
        """This secret, named `name` unless it already has a name."""
        return self if self._name is not None else Secret(self._value, name)

    def reveal(self) -> str:
        """The value itself: for the one place that must hand it on."""
        return self._value

    get_secret_value = reveal  # pydantic's SecretStr spelling

    def __repr__(self) -> str:
        return f"Secret({marker(self._name)!r})"

    def __str__(self) -> str:
        return marker(self._name)

    def __format__(self, spec: str) -> str:
        return format(marker(self._name), spec)

    def __len__(self) -> int:
        return len(self._value)

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        return hmac.compare_digest(self._value.encode(), other._value.encode())

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __reduce__(self) -> Any:
        # Pickling would write the value to wherever the pickle goes (a cache, a queue).
        raise TypeError("a Secret cannot be pickled; pass its name and read the value where "
                        "it is needed")

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.no_info_plain_validator_function(
            _validate,
            serialization=core_schema.plain_serializer_function_ser_schema(
                str, when_used="always"),
        )

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "format": "password", "writeOnly": True}


def _validate(value: object) -> Secret:
    if isinstance(value, Secret):
        return value
    if isinstance(value, str):
        return Secret(value)
    raise ConfigurationError(f"expected a Secret or str, got {type(value).__name__}")


def _env_text(value: object) -> str | Secret:
    if isinstance(value, str | Secret):
        return value
    raise PydanticCustomError("string_type", "Input should be a valid string or a sandlot.Secret")


#: An environment value in options models: a str, or a `Secret` (dumped as `[secret:NAME]`).
EnvText = Annotated[
    str | Secret,
    PlainValidator(_env_text),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string"}),
]
