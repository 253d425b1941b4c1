"""The installed distribution's version, read once from its metadata."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

#: What `__version__` reads when sandlot is imported from a source tree that was never
#: installed (no metadata to read): a valid PEP 440 local version that sorts below any release.
UNKNOWN = "0+unknown"


def installed_version(distribution: str = "sandlot") -> str:
    """The version pip recorded for `distribution`, or UNKNOWN when it is not installed."""
    try:
        return version(distribution)
    except PackageNotFoundError:
        return UNKNOWN


__version__ = installed_version()
