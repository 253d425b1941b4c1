"""Provider configuration errors: one readable line per problem, never a value the user gave."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from typing import Any

import pytest

from sandlot.config import parse_config
from sandlot.errors import ConfigurationError

TOKEN = "cdr-0123456789abcdefghijklmnopqrstuvwxyz"


def fragments(secret: str, size: int = 12) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def assert_clean(text: str) -> None:
    for internal in ("input_value", "tagged-union", "function-after", "errors.pydantic.dev"):
        assert internal not in text, text
    leaked = [piece for piece in fragments(TOKEN) if piece in text]
    assert not leaked, f"{len(leaked)} fragments of the token in: {text}"


CASES: list[tuple[Any, str]] = [
    ({"type": "coder", "template": "t", "session_token": TOKEN},
     "coder: on_close is required (delete, stop or leave)"),
    ({"type": "docker", "image": "x", "session_token": TOKEN},
     "docker: on_close is required (delete, stop or leave)"),
    ({"type": "lokal", "session_token": TOKEN},
     'unknown provider type "lokal"; expected local, docker or coder'),
    ({"type": TOKEN}, "unknown provider type; expected local, docker or coder"),
    ({"session_token": TOKEN}, '"type" is required: one of local, docker or coder'),
    ({"type": "coder", "workspace": "w", "on_close": "delet", "session_token": TOKEN},
     "coder: on_close must be 'delete', 'stop' or 'leave'"),
    ({"type": "coder", "workspace": "w", "on_close": "leave", "session_token": 12345},
     "coder: session_token: Input should be a valid string"),
    ({"type": "local", "bogus": TOKEN}, "local: unknown option bogus; see the local options"),
    ({"type": "coder", "on_close": "delete", "session_token": TOKEN},
     "coder: give exactly one of `template`"),
    ({"type": "local", "env": {"A": 1}, "inherit_env": [TOKEN]}, "local: env.A: Input should be"),
    ('{"type": "coder", "session_token": "' + TOKEN, "not valid JSON (at line 1 column"),
    (json.dumps([TOKEN]), "it must be a JSON object"),
]  # fmt: skip


@pytest.mark.parametrize(("config", "expected"), CASES)
def test_each_error_names_the_field_and_the_fix_and_no_value(
    config: Any, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ConfigurationError) as caught:
        parse_config(config)
    message = str(caught.value)
    assert message.startswith("invalid provider configuration: ")
    assert expected in message
    assert_clean(f"{message}\n{caught.value!r}\n{caplog.text}")


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sandlot", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )  # fmt: skip


@pytest.mark.parametrize(("config", "expected"), [CASES[0], CASES[5], CASES[10], CASES[11]])
def test_the_cli_prints_the_same_clean_line(config: Any, expected: str) -> None:
    text = config if isinstance(config, str) else json.dumps(config)
    run = run_cli("exec", "--provider-config", text, "--", "true")
    assert run.returncode != 0
    assert "Traceback" not in run.stderr
    assert expected in run.stderr
    assert_clean(run.stdout + run.stderr)


def test_serve_reads_sandlot_provider_cleanly() -> None:
    config = json.dumps({"type": "coder", "template": "t", "session_token": TOKEN})
    run = run_cli("serve", "--port", "0", "--mode", "shell", env={"SANDLOT_PROVIDER": config})
    assert run.returncode != 0
    assert "coder: on_close is required (delete, stop or leave)" in run.stderr
    assert_clean(run.stdout + run.stderr)
