"""Named secrets from the command line: the value from the host environment or a file, never
from argv (which every user of the machine can read in /proc and which shells keep in history).

    NAME            the host variable NAME
    NAME=ENVVAR     the host variable ENVVAR
    NAME=@PATH      the contents of the file PATH (one trailing newline dropped)
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..errors import ConfigurationError
from .value import Secret, check_name


def secret_from_spec(spec: str, flag: str, host: Mapping[str, str] | None = None) -> Secret:
    """One `NAME[=ENVVAR|=@PATH]` as a named `Secret`."""
    environ = os.environ if host is None else host
    name, sep, source = spec.partition("=")
    name = name.strip()
    try:
        check_name(name)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{flag} {name!r}: {exc}") from None
    if not sep:
        source = name
    if source.startswith("@"):
        path = Path(source[1:]).expanduser()
        try:
            value = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigurationError(f"{flag} {name}: cannot read the secret file {str(path)!r}"
                                     f" ({exc.strerror}); check the path") from None
        value = value[:-1] if value.endswith("\n") else value
        if not value:
            raise ConfigurationError(f"{flag} {name}: the secret file {str(path)!r} is empty")
        return Secret(value, name)
    value = environ.get(source, "")
    if not value:
        raise ConfigurationError(
            f"{flag} {name}: the host environment variable {source} is not set (or empty); "
            f"export it, or give a file with {name}=@PATH (values never go on the command line)"
        )
    return Secret(value, name)


def secrets_from_specs(specs: Iterable[str], flag: str,
                       host: Mapping[str, str] | None = None) -> dict[str, Secret]:
    """Several specs, by name; a name given twice is refused."""
    out: dict[str, Secret] = {}
    for spec in specs:
        secret = secret_from_spec(spec, flag, host)
        assert secret.name is not None
        if secret.name in out:
            raise ConfigurationError(f"{flag}: secret {secret.name} is given twice")
        out[secret.name] = secret
    return out
