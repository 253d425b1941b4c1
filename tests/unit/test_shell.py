from __future__ import annotations

import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandlot import ConfigurationError, InvalidEnvError, InvalidPathError
from sandlot._shell import display, render, to_argv, validate_env, validate_sandbox_path

text = st.text(alphabet=st.characters(blacklist_characters="\0", blacklist_categories=("Cs",)))


@given(st.lists(text, min_size=1, max_size=5), st.dictionaries(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), text, max_size=3))
def test_render_round_trips_any_argv_and_env(argv: list[str], env: dict[str, str]) -> None:
    line = render(["printf", "%s\\0", *argv], cwd="/", env=env)
    out = subprocess.run(["sh", "-c", line], capture_output=True, check=True).stdout
    assert out.split(b"\0")[:-1] == [a.encode() for a in argv]


def test_env_validation() -> None:
    assert validate_env({"A_1": "x=y\n"}) == {"A_1": "x=y\n"}
    for bad in ["A=B", "A B", "9", "", "é"]:
        with pytest.raises(InvalidEnvError, match="names must match"):
            validate_env({bad: "v"})
    with pytest.raises(InvalidEnvError, match="NUL"):
        validate_env({"A": "a\0b"})


def test_paths_and_commands() -> None:
    assert validate_sandbox_path("/a b") == "/a b"
    with pytest.raises(InvalidPathError, match="absolute POSIX path"):
        validate_sandbox_path("a/b")
    assert to_argv("echo hi") == ["sh", "-c", "echo hi"]
    assert display(["ls", "a b"]) == "ls 'a b'"
    with pytest.raises(ConfigurationError):
        to_argv([])


def test_env_values_are_masked_for_logs() -> None:
    from sandlot._shell import mask_env_values

    line = render(["env"], cwd="/w", env={"TOKEN": "s3cr'et value", "B": "x"})
    masked = mask_env_values(line)
    assert "s3cr" not in masked and "value" not in masked
    assert "export TOKEN=***" in masked and "export B=***" in masked
    assert masked.endswith("exec env")
