"""Options of sandlot.coder(): every rule, checked before any `coder` command runs."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from pydantic import SecretStr

import sandlot
from sandlot import ConfigurationError, parse_config
from sandlot.backends.coder.options import (
    CoderAttachOptions,
    CoderCreateOptions,
    stringify_parameter,
)

# coder_binary points nowhere: if validation let anything through to the CLI, the test would
# see CoderCLINotFoundError instead of the ConfigurationError it expects.
NOWHERE = "/nonexistent/coder"
TOKEN = "abcdefghij-tokentokentokentoken12"


def make(**kw: Any) -> Any:
    kw.setdefault("coder_binary", NOWHERE)
    return sandlot.coder(**kw)


def test_on_close_is_required() -> None:
    with pytest.raises(TypeError, match="on_close"):
        sandlot.coder(template="t")  # type: ignore[call-arg]
    with pytest.raises(ConfigurationError, match="on_close"):
        parse_config({"type": "coder", "template": "t"})


def test_on_close_values() -> None:
    for value in ("delete", "stop", "leave"):
        assert make(template="t", on_close=value).options.on_close == value
    with pytest.raises(ConfigurationError, match=r"on_close.*'delete', 'stop' or 'leave'"):
        make(template="t", on_close="destroy")


@pytest.mark.parametrize(
    "kw",
    [
        {"template": "t", "workspace": "w"},  # both
        {},  # neither
    ],
)
def test_exactly_one_of_template_or_workspace(kw: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError, match=r"exactly one of `template`.*or `workspace`"):
        make(on_close="stop", **kw)


def test_modes_are_the_union_members() -> None:
    created = make(template="docker", on_close="delete").options
    attached = make(workspace="dev", on_close="leave").options
    assert isinstance(created, CoderCreateOptions) and created.mode == "create"
    assert isinstance(attached, CoderAttachOptions) and attached.mode == "attach"


@pytest.mark.parametrize(
    "extra", ["template_version", "preset", "organization", "workspace_name", "parameter_file"]
)
def test_create_only_options_are_refused_in_attach_mode(extra: str) -> None:
    with pytest.raises(ConfigurationError, match=f"{extra} only applies when creating"):
        make(workspace="dev", on_close="stop", **{extra: "x"})
    with pytest.raises(ConfigurationError, match="parameters only applies"):
        make(workspace="dev", on_close="stop", parameters={"a": 1})


def test_owner_is_only_for_a_bare_attach_name() -> None:
    assert make(workspace="dev", owner="alice", on_close="leave").options.reference() == (
        "alice/dev"
    )
    with pytest.raises(ConfigurationError, match="owner is only for a bare workspace name"):
        make(workspace="bob/dev", owner="alice", on_close="leave")
    with pytest.raises(ConfigurationError, match="owner is only for a bare workspace name"):
        make(workspace="0b8e3f36-0d4e-4e47-9f1e-2a1c0a3b5a77", owner="alice", on_close="leave")
    with pytest.raises(ConfigurationError, match="owner only applies when attaching"):
        make(template="t", owner="alice", on_close="leave")


@pytest.mark.parametrize(
    "ref", ["dev", "alice/dev", "0b8e3f36-0d4e-4e47-9f1e-2a1c0a3b5a77", "a-b-1"]
)
def test_workspace_references(ref: str) -> None:
    assert make(workspace=ref, on_close="leave").options.reference() == ref


@pytest.mark.parametrize("ref", ["", "a b", "a/b/c", "-dev", "dev.main", "x" * 33, "a//b"])
def test_bad_workspace_references(ref: str) -> None:
    with pytest.raises(ConfigurationError, match="not a valid Coder name"):
        make(workspace=ref, on_close="leave")


@pytest.mark.parametrize("name", ["my ws", "-x", "x-", "a_b", "x" * 33])
def test_workspace_name_follows_coder_rules(name: str) -> None:
    with pytest.raises(ConfigurationError, match=r"workspace_name.*not a valid Coder name"):
        make(template="t", workspace_name=name, on_close="delete")


def test_default_workspace_name_is_fresh_per_sandbox() -> None:
    from sandlot.backends.coder.options import default_workspace_name

    names = {default_workspace_name() for _ in range(50)}
    assert len(names) == 50
    assert all(n.startswith("sandlot-") and len(n) == 16 for n in names)
    assert make(template="t", on_close="delete").options.workspace_name is None


@pytest.mark.parametrize("workdir", ["relative/dir", "~/x", "", "./x"])
def test_workdir_must_be_absolute(workdir: str) -> None:
    with pytest.raises(ConfigurationError, match="workdir must be an absolute POSIX path"):
        make(template="t", on_close="delete", workdir=workdir)


def test_workdir_is_normalised() -> None:
    opts = make(template="t", on_close="delete", workdir="/home/coder//proj/./x/").options
    assert opts.workdir == "/home/coder/proj/x"


@pytest.mark.parametrize("key", ["A=B", "1A", "A B", ""])
def test_env_keys_are_posix_names(key: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid environment variable name"):
        make(template="t", on_close="delete", env={key: "v"})


@pytest.mark.parametrize("agent", ["", "a.b", "a/b", "a b"])
def test_agent_is_a_bare_name(agent: str) -> None:
    with pytest.raises(ConfigurationError, match="is not an agent name"):
        make(template="t", on_close="delete", agent=agent)


@pytest.mark.parametrize("url", ["coder.example.com", "ftp://coder.example.com", "https://"])
def test_coder_url_must_be_http(url: str) -> None:
    with pytest.raises(ConfigurationError, match="coder_url must be an http"):
        make(template="t", on_close="delete", coder_url=url)


@pytest.mark.parametrize("field", ["build_timeout", "ready_timeout", "ssh_ready_timeout",
                                   "connect_timeout"])
def test_timeouts_are_positive(field: str) -> None:
    with pytest.raises(ConfigurationError, match=field):
        make(template="t", on_close="delete", **{field: 0})


def test_parameters_are_stringified_for_the_cli() -> None:
    opts = make(
        template="t",
        on_close="delete",
        parameters={"region": "eu-west", "cpus": 4, "ratio": 0.5, "gpu": True, "off": False,
                    "zones": ["a", "b"], "text": "a=b, c"},
    ).options
    assert opts.parameter_flags() == [
        "--parameter", "region=eu-west",
        "--parameter", "cpus=4",
        "--parameter", "ratio=0.5",
        "--parameter", "gpu=true",
        "--parameter", "off=false",
        "--parameter", 'zones=["a", "b"]',
        "--parameter", "text=a=b, c",
    ]  # fmt: skip
    assert stringify_parameter(True) == "true"


@pytest.mark.parametrize("name", ["", "a=b", " a"])
def test_parameter_names(name: str) -> None:
    with pytest.raises(ConfigurationError, match="parameter name"):
        make(template="t", on_close="delete", parameters={name: "x"})


def test_template_must_not_be_blank() -> None:
    with pytest.raises(ConfigurationError, match="template is empty"):
        make(template="  ", on_close="delete")


def test_unknown_options_are_refused_in_config() -> None:
    with pytest.raises(ConfigurationError, match="bogus"):
        parse_config({"type": "coder", "template": "t", "on_close": "stop", "bogus": 1})


def test_config_json_builds_either_mode() -> None:
    created = parse_config(json.dumps(
        {"type": "coder", "template": "t", "on_close": "delete", "parameters": {"a": 1}}
    ))
    attached = parse_config({"type": "coder", "workspace": "alice/dev", "on_close": "leave"})
    assert isinstance(created, CoderCreateOptions) and created.parameters == {"a": 1}
    assert isinstance(attached, CoderAttachOptions) and attached.reference() == "alice/dev"
    assert created.build().name == "coder"
    schema = json.dumps(sandlot.config.config_schema())
    assert "CoderCreateOptions" in schema and "CoderAttachOptions" in schema


def test_the_session_token_never_shows(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    provider = make(template="t", on_close="delete", session_token=TOKEN)
    assert TOKEN not in repr(provider)
    assert TOKEN not in repr(provider.options) and TOKEN not in str(provider.options)
    assert isinstance(provider.options.session_token, SecretStr)
    assert provider.options.session_token.get_secret_value() == TOKEN
    # Invalid options next to the token: neither the error nor pydantic's text echoes it.
    for bad in (
        {"type": "coder", "on_close": "delete", "session_token": TOKEN + "x1"},
        {"type": "coder", "template": "t", "on_close": "no", "session_token": TOKEN + "x2"},
        {"type": "coder", "template": "t", "on_close": "stop", "session_token": TOKEN + "x3",
         "bogus": TOKEN + "x3"},
    ):
        with pytest.raises(ConfigurationError) as caught:
            parse_config(bad)
        assert TOKEN not in str(caught.value)
    with pytest.raises(ConfigurationError) as caught:
        make(template="t", on_close="nope", session_token=TOKEN + "x4")
    assert TOKEN not in str(caught.value)
    assert TOKEN not in caplog.text


def test_blank_session_token_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="session_token is empty"):
        make(template="t", on_close="delete", session_token="   ")
