"""The committed recordings of the real CLI (scripts/record-coder-cli.py) are sound.

They are what the fake `coder` is compared against, so they must match the pinned
release, cover every case the recorder makes, and leak nothing that varies per run
or must stay secret (ids, ports, temp paths, tokens).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from .harness import REPO, VERSION_FILE

FIXTURES = REPO / "tests" / "fixtures" / "coder-cli"
UNMASKED = [
    re.compile(r"/\.cache/sandlot/coder/"),
    re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
    re.compile(r"127\.0\.0\.1:\d+"),
    re.compile(r"/tmp/sandlot-realcoder-"),
    re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}"),
]
KEYS = {"name", "coder_version", "argv", "env", "note", "exit_code", "stdout", "stderr"}


def _index() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / "INDEX.json").read_text())
    return data


def _cases() -> list[str]:
    return list(_index()["cases"])


def test_recordings_are_of_the_pinned_release() -> None:
    assert _index()["coder_version"] == VERSION_FILE.read_text().strip(), (
        "re-run scripts/record-coder-cli.py after changing scripts/coder-version"
    )
    on_disk = {p.stem for p in FIXTURES.glob("*.json")} - {"INDEX"}
    assert on_disk == set(_cases())


@pytest.mark.parametrize("case", _cases())
def test_recording_is_complete_and_masked(case: str) -> None:
    record = json.loads((FIXTURES / f"{case}.json").read_text())
    assert set(record) >= KEYS, f"missing keys: {KEYS - set(record)}"
    assert record["name"] == case
    assert record["argv"][0] == "coder"
    assert isinstance(record["exit_code"], int)
    text = json.dumps(record)
    for pattern in UNMASKED:
        assert not pattern.search(text), f"{case}: unmasked {pattern.pattern!r}"
    assert "session-token" not in record["stdout"] + record["stderr"], "a token was printed"
