"""Shared test helpers: the CI rule for missing components lives here, in one place."""

from __future__ import annotations

import os
import shutil

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def require(condition: bool, reason: str) -> None:
    """Skip locally when a component is missing; FAIL in CI, where nothing may be missing."""
    if condition:
        return
    if in_ci():
        pytest.fail(f"required component missing in CI: {reason}", pytrace=False)
    pytest.skip(reason)


def require_binary(name: str, hint: str = "") -> str:
    """The path of `name` on PATH, else skip (locally) or fail (CI) with an install hint."""
    path = shutil.which(name)
    require(path is not None, f"{name} not on PATH{'; ' + hint if hint else ''}")
    assert path is not None
    return path
