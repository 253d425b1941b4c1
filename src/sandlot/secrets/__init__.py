"""Secrets a command can use but no output shows: `Secret`, the scrubber, the named-secret
configuration (adr/0047)."""

from .config import secret_from_spec, secrets_from_specs
from .registry import GLOBAL, EnvValue, SecretSet, reveal
from .scrub import Scrubber, StreamScrubber
from .value import EnvText, Secret, check_name, marker

__all__ = [
    "GLOBAL",
    "EnvText",
    "EnvValue",
    "Scrubber",
    "Secret",
    "SecretSet",
    "StreamScrubber",
    "check_name",
    "marker",
    "reveal",
    "secret_from_spec",
    "secrets_from_specs",
]
