"""Which secrets a sandbox was given, and the process-wide set that logs and errors scrub.

A sandbox's `SecretSet` grows whenever a `Secret` is passed to it (a command's env, the
provider's env, a toolbox's env or named secrets); every exit point asks it for the current
scrubber. Each secret also joins `GLOBAL`, which `errors.redact` (every `SandlotError`
message) and the `sandlot` loggers' filter scrub with: a message or log line may be made far
from any sandbox.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from .. import errors
from .scrub import Scrubber
from .value import Secret

EnvValue = str | Secret


class SecretSet:
    """Named secret values (first name wins for a value); its scrubber is rebuilt on change."""

    def __init__(self, parent: SecretSet | None = None) -> None:
        self._values: dict[str, str] = {}
        self._scrubber = Scrubber()
        self._lock = threading.Lock()
        self._parent = parent

    def add(self, secret: Secret, name: str | None = None) -> None:
        if name is not None:
            secret = secret.named(name)
        value = secret.reveal()
        with self._lock:
            if value not in self._values:
                self._values[value] = secret.name or "unnamed"
                self._scrubber = Scrubber((n, v) for v, n in self._values.items())
        if self._parent is not None:
            self._parent.add(secret)

    def add_env(self, env: Mapping[str, EnvValue]) -> None:
        """Register every `Secret` in `env`, named after its variable."""
        self.reveal_env(env)

    def reveal_env(self, env: Mapping[str, EnvValue] | None) -> dict[str, str] | None:
        """`env` with each `Secret` registered here (named after its variable) and revealed;
        other values unchanged (validation is `_shell.validate_env`'s job)."""
        if env is None:
            return None
        out: dict[str, str] = {}
        for key, value in env.items():
            if isinstance(value, Secret):
                self.add(value, key if isinstance(key, str) else None)
                out[key] = value.reveal()
            else:
                out[key] = value
        return out

    @property
    def scrubber(self) -> Scrubber:
        return self._scrubber

    @property
    def names(self) -> list[str]:
        return self._scrubber.names

    def __bool__(self) -> bool:
        return bool(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"<SecretSet {self.names}>"


def reveal(env: Mapping[str, EnvValue]) -> dict[str, str]:
    """`env` with each `Secret` revealed, registering nothing (the caller registers them with
    the sandbox they are for, once it exists)."""
    return {k: v.reveal() if isinstance(v, Secret) else v for k, v in env.items()}


#: Every secret any sandbox of this process was given.
GLOBAL = SecretSet()


def _redact(text: str) -> str:
    return GLOBAL.scrubber.text(text)


errors.add_redactor(_redact)


class ScrubFilter(logging.Filter):
    """Scrubs every known secret from a log record's rendered message."""

    def filter(self, record: logging.LogRecord) -> bool:
        scrubber = GLOBAL.scrubber
        if scrubber:
            message = record.getMessage()
            clean = scrubber.text(message)
            if clean != message:
                record.msg, record.args = clean, None
        return True


#: sandlot's loggers (tests/unit/test_secrets.py checks every logger in src/ is here): a
#: logger's filter applies to records logged on it, not to its children's.
LOGGERS = ("sandlot", "sandlot.fanout", "sandlot.tools", "sandlot.local", "sandlot.coder",
           "sandlot.ssh", "sandlot.secrets", "sandlot.session", "sandlot.snapshots")

_FILTER = ScrubFilter()
for _name in LOGGERS:
    logging.getLogger(_name).addFilter(_FILTER)
