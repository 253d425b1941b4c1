"""Pure pieces of the fake: flag parsing, error rendering, ssh targets, timestamps, YAML."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from sandlot.testing import FakeCoderDeployment
from sandlot.testing.fakecoder import args, errors, params, shapes, state
from sandlot.testing.fakecoder.cli import COMMANDS, normalize_target


def parse(argv: list[str], env: dict[str, str] | None = None) -> args.Parsed:
    return args.parse(argv, COMMANDS["create"].options, env or {})


def test_flags_like_pflag() -> None:
    parsed = parse(["ws", "-tdocker", "--parameter", "a=1", "--parameter=b=2", "-y", "--org=x"])
    assert parsed.args == ["ws"]
    assert parsed.text("template") == "docker"
    assert parsed.many("parameter") == ["a=1", "b=2"]
    assert parsed.flag("yes") and parsed.text("org") == "x"
    assert parse(["--", "-not-a-flag"]).args == ["-not-a-flag"]
    assert parse(["--yes=false"]).flag("yes") is False


def test_environment_fills_unset_flags() -> None:
    env = {"CODER_TEMPLATE_NAME": "from-env", "CODER_RICH_PARAMETER": "a=1,b=2"}
    assert parse([], env).text("template") == "from-env"
    assert parse(["-t", "flag"], env).text("template") == "flag"
    assert parse([], env).many("parameter") == ["a=1", "b=2"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--nope"], "unknown flag: --nope"),
        (["-z"], "unknown shorthand flag: 'z' in -z"),
        (["--template"], "flag needs an argument: --template"),
        (["-t"], "flag needs an argument: 't' in -t"),
    ],
)
def test_parse_errors(argv: list[str], message: str) -> None:
    with pytest.raises(errors.CLIError) as caught:
        parse(argv)
    assert caught.value.message == message


def test_error_rendering_matches_root_go() -> None:
    plain = errors.CLIError("function decided not to work").wrap("some error")
    assert plain.render("exp example-error cmd") == (
        'Encountered an error running "coder exp example-error cmd", see "coder exp '
        'example-error cmd --help" for more information\n'
        "error: some error: function decided not to work"
    )
    api = errors.api_error(
        "Top level sdk error message.",
        validations=[("region", "magic dust is not available in your region")],
        helper="Have you tried turning it off and on again?",
        detail="hidden when there is a helper",
    )
    assert api.body() == (
        "Top level sdk error message.\n1 validation error(s) found\n"
        "\t region : magic dust is not available in your region\n"
        "Suggestion: Have you tried turning it off and on again?"
    )
    assert errors.api_error("m", detail="shown").wrap("a").wrap("b").body() == (
        "Trace=[b: a: ]\nm\nshown"
    )


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("ws", "ws"),
        ("ws.agent", "ws.agent"),
        ("me/ws", "me/ws"),
        ("me/ws.agent", "me/ws.agent"),
        ("me--ws", "me/ws"),
        ("me--ws--agent", "me/ws.agent"),
        ("agent.ws.me", "me/ws.agent"),
    ],
)
def test_ssh_target_forms(target: str, expected: str) -> None:
    assert normalize_target(target, "", "") == expected


def test_ssh_host_prefix_and_suffix() -> None:
    assert normalize_target("coder.ws", "coder.", "") == "ws"
    assert normalize_target("ws.agent.coder", "", "coder") == "ws.agent"


def test_timestamps_like_go() -> None:
    assert state.rfc3339(0.0) == "1970-01-01T00:00:00Z"
    assert state.rfc3339(1.5) == "1970-01-01T00:00:01.5Z"
    assert state.rfc3339(1.123456) == "1970-01-01T00:00:01.123456Z"
    assert state.rfc3339(None) is None


def test_json_escapes_like_go() -> None:
    assert (
        shapes.dumps({"a": "<&>", "b": "ü"}) == '{\n  "a": "\\u003c\\u0026\\u003e",\n  "b": "ü"\n}'
    )


def test_ids_are_version_4_uuids() -> None:
    import uuid

    value = uuid.UUID(state.new_id())
    assert value.version == 4


def test_parameter_file_subset_of_yaml(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("# comment\nname: 'quoted'\nflag: true\nlist: [a, b]\nblock:\n  - x\n  - y\n")
    assert params.parse_yaml_map(str(path)) == {
        "name": "quoted",
        "flag": "true",
        "list": '["a","b"]',
        "block": '["x","y"]',
    }


def test_long_interpreter_paths_get_a_sh_launcher(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deployment = FakeCoderDeployment(tmp_path / "d")
    long_dir = tmp_path / ("x" * 130)
    long_dir.mkdir()
    python = long_dir / "python"
    python.symlink_to(os.path.realpath(os.sys.executable))
    monkeypatch.setattr("sys.executable", str(python))
    exe = deployment.install(tmp_path / "bin")
    assert exe.read_text().startswith("#!/bin/sh\n")
    out = subprocess.run(
        [exe, "whoami", "-o", "json"],
        env={**os.environ, **deployment.env()},
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout)[0]["username"] == "testuser"
    deployment.shutdown()
