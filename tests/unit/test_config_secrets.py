"""No secret a user passed in options comes back in a configuration error or a repr.

Issue 35.9: `sandlot.docker(...)` errors quoted the input (`input_value={'BAD NAME':
'hunter2-...'}`) and `repr(CoderProvider)` showed env values. Every factory, every bad-input
variant, with a secret-looking env value (and token): the secret is in no str, repr or args of
the error, in no repr of the provider or its options, and not on the CLI's stderr.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import sandlot
from sandlot import ConfigurationError
from sandlot.backends.coder.options import CoderAttachOptions, CoderCreateOptions
from sandlot.backends.docker.options import DockerOptions
from sandlot.backends.local import LocalOptions

SECRET = "hunter2-0123456789abcdefghijklmnop"
TOKEN = "cdr-tok-9876543210zyxwvutsrqponmlk"
NOWHERE = "/nonexistent/coder"  # a coder provider that got through would fail differently


def fragments(secret: str, size: int = 10) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def assert_clean(text: str) -> None:
    for internal in ("input_value", "errors.pydantic.dev", "function-after"):
        assert internal not in text, text
    for secret in (SECRET, TOKEN):
        leaked = [piece for piece in fragments(secret) if piece in text]
        assert not leaked, f"the secret leaked: {text}"


def coder(**kw: Any) -> Any:
    kw.setdefault("coder_binary", NOWHERE)
    kw.setdefault("session_token", TOKEN)
    return sandlot.coder(**kw)


Factory = Callable[..., Any]

#: (factory, keywords, what the message must say): every bad-input variant the issue found,
#: and their kin on the other factories, each with the secret in an env value.
BAD: list[tuple[str, Factory, dict[str, Any], str]] = [
    ("docker bad env name", sandlot.docker,
     {"image": "img", "on_close": "delete", "env": {"BAD NAME": SECRET}},
     "invalid environment variable name"),
    ("docker no image", sandlot.docker,
     {"on_close": "delete", "env": {"K": SECRET}}, "exactly one of `image`"),
    ("docker NUL in a value", sandlot.docker,
     {"image": "img", "on_close": "delete", "env": {"K": SECRET + "\0x"}}, "NUL"),
    ("docker attach with env", sandlot.docker,
     {"attach": "box", "on_close": "leave", "env": {"K": SECRET}},
     "env only applies when creating"),
    ("docker secret in a bad value", sandlot.docker,
     {"image": "img", "on_close": "delete", "env": {"K": SECRET}, "memory": SECRET},
     "memory must look like 512m"),
    ("docker secret in a mount", sandlot.docker,
     {"image": "img", "on_close": "delete", "env": {"K": SECRET}, "mounts": [SECRET]},
     "mount"),
    ("docker bad on_close", sandlot.docker,
     {"image": "img", "on_close": "destroy", "env": {"K": SECRET}}, "on_close"),
    ("local bad isolation", sandlot.local,
     {"isolation": "docker", "env": {"K": SECRET}}, "isolation"),
    ("local relative attach", sandlot.local,
     {"attach": SECRET, "env": {"K": SECRET}}, "attach must be an absolute path"),
    ("local attach and root", sandlot.local,
     {"attach": "/" + SECRET, "root": "/tmp", "env": {"K": SECRET}}, "not both"),
    ("local non-str env value", sandlot.local,
     {"env": {"K": 1, "L": SECRET}}, "env.K"),
    ("local bad inherit_env", sandlot.local,
     {"inherit_env": ["BAD NAME"], "env": {"K": SECRET}}, "inherit_env"),
    ("coder bad env name", coder,
     {"template": "t", "on_close": "delete", "env": {"BAD NAME": SECRET}},
     "invalid environment variable name"),
    ("coder no template or workspace", coder,
     {"on_close": "delete", "env": {"K": SECRET}}, "exactly one of `template`"),
    ("coder NUL in a value", coder,
     {"template": "t", "on_close": "delete", "env": {"K": SECRET + "\0x"}}, "NUL"),
    ("coder attach with a create option", coder,
     {"workspace": "dev", "on_close": "leave", "preset": SECRET, "env": {"K": SECRET}},
     "preset only applies when creating"),
    ("coder bad url", coder,
     {"template": "t", "on_close": "delete", "coder_url": "ftp://u:" + SECRET + "@h",
      "env": {"K": SECRET}}, "coder_url must be an http"),
    ("coder bad workdir", coder,
     {"template": "t", "on_close": "delete", "workdir": SECRET, "env": {"K": SECRET}},
     "workdir must be an absolute"),
    ("coder bad workspace", coder,
     {"workspace": SECRET + "/x/y", "on_close": "leave", "env": {"K": SECRET}},
     "not a valid Coder name"),
    ("coder bad agent", coder,
     {"template": "t", "on_close": "delete", "agent": SECRET + ".x", "env": {"K": SECRET}},
     "not an agent name"),
    ("coder owner with a UUID", coder,
     {"workspace": "0b8e3f36-0d4e-4e47-9f1e-2a1c0a3b5a77", "owner": "alice",
      "on_close": "leave", "env": {"K": SECRET}}, "owner is only for a bare workspace"),
]  # fmt: skip


@pytest.mark.parametrize(("factory", "kw", "expected"), [case[1:] for case in BAD],
                         ids=[case[0] for case in BAD])
def test_factory_errors_are_typed_and_never_quote_a_value(
    factory: Factory, kw: dict[str, Any], expected: str
) -> None:
    with pytest.raises(ConfigurationError) as caught:
        factory(**kw)
    error = caught.value
    assert type(error) is ConfigurationError  # never pydantic's ValidationError
    assert expected in str(error)
    assert_clean(f"{error}\n{error!r}\n{error.args!r}")
    assert error.__cause__ is None and error.__suppress_context__  # no chained pydantic error


def test_local_with_a_wrong_isolation_is_a_configuration_error() -> None:
    # Issue 26.10: pydantic's raw ValidationError with a URL escaped sandlot.local().
    with pytest.raises(ConfigurationError, match="isolation: Input should be 'bwrap'") as caught:
        sandlot.local(isolation="docker")  # type: ignore[arg-type]
    assert "pydantic" not in str(caught.value)


#: The same options as JSON (the CLI, serve, mcp and $SANDLOT_PROVIDER read these).
def _as_config(kw: dict[str, Any], kind: str) -> dict[str, Any]:
    data = {key: value for key, value in kw.items() if key != "coder_binary"}
    return {"type": kind, **data}


CONFIG_BAD = [
    (name, _as_config(kw, name.split()[0])) for name, _factory, kw, _ in BAD
    if name.split()[0] in ("docker", "coder", "local")
]


@pytest.mark.parametrize("config", [c for _, c in CONFIG_BAD], ids=[n for n, _ in CONFIG_BAD])
def test_parse_config_errors_never_quote_a_value(config: dict[str, Any]) -> None:
    if config["type"] == "coder":
        config = {**config, "session_token": TOKEN}
    with pytest.raises(ConfigurationError) as caught:
        sandlot.parse_config(config)
    assert_clean(f"{caught.value}\n{caught.value!r}\n{caught.value.args!r}")


@pytest.mark.parametrize(
    "name", ["docker bad env name", "docker no image", "docker NUL in a value",
             "docker attach with env", "coder bad url", "local relative attach"],
)  # fmt: skip
def test_the_cli_never_prints_a_value(name: str) -> None:
    config = dict(CONFIG_BAD)[name]
    run = subprocess.run(
        [sys.executable, "-m", "sandlot", "exec", "--provider-config", json.dumps(config),
         "--", "true"],
        capture_output=True, text=True, timeout=60, env=dict(os.environ),
    )  # fmt: skip
    assert run.returncode != 0
    assert "invalid provider configuration" in run.stderr and "Traceback" not in run.stderr
    assert_clean(run.stdout + run.stderr)


@pytest.mark.parametrize(
    "make",
    [
        lambda: sandlot.local(env={"K": SECRET}),
        lambda: sandlot.docker("img", on_close="delete", env={"K": SECRET}),
        lambda: coder(template="t", on_close="delete", env={"K": SECRET}),
        lambda: coder(workspace="dev", on_close="leave", env={"K": SECRET}),
        lambda: sandlot.provider_from_config(
            {"type": "coder", "workspace": "dev", "on_close": "leave", "env": {"K": SECRET},
             "session_token": TOKEN}),
    ],
    ids=["local", "docker", "coder-create", "coder-attach", "coder-config"],
)
def test_reprs_of_providers_and_options_hide_env_values_and_tokens(make: Callable[[], Any]) -> None:
    provider = make()
    shown = f"{provider!r}\n{provider.options!r}\n{provider.options}"
    assert_clean(shown)
    assert "K" in repr(provider.options)  # the names stay: they say what is set
    assert provider.options.env == {"K": SECRET}  # only the rendering hides it


#: Every field of every options model, given the secret as its value: whichever fields refuse
#: a string, their error quotes none of it (a sweep, so a new field's validator is covered).
SWEEP = [
    (sandlot.local, {"env": {"K": SECRET}}, sorted(LocalOptions.model_fields)),
    (sandlot.docker, {"image": "img", "on_close": "delete", "env": {"K": SECRET}},
     sorted(DockerOptions.model_fields)),
    (coder, {"template": "t", "on_close": "delete", "env": {"K": SECRET}},
     sorted(CoderCreateOptions.model_fields)),
    (coder, {"workspace": "dev", "on_close": "leave", "env": {"K": SECRET}},
     sorted(CoderAttachOptions.model_fields)),
]  # fmt: skip


@pytest.mark.parametrize(("factory", "base", "fields"), SWEEP, ids=["local", "docker",
                                                                    "coder-create", "coder-attach"])
def test_every_field_with_a_secret_value_errs_cleanly(
    factory: Factory, base: dict[str, Any], fields: list[str]
) -> None:
    refused = 0
    for field in fields:
        if field in ("type", "session_token", "coder_binary"):
            continue
        for value in (SECRET, {"K": SECRET}, [SECRET], SECRET + "\0", "/" + SECRET + ",x"):
            try:
                factory(**{**base, field: value})
            except ConfigurationError as exc:
                refused += 1
                assert_clean(f"{exc}\n{exc!r}\n{exc.args!r}")
    assert refused > len(fields)  # the sweep really exercised the validators


def test_the_renderer_masks_a_value_a_careless_validator_quotes() -> None:
    # The safety net under the rule: a validator that does put its value in the message.
    from pydantic import BaseModel, ValidationError, field_validator

    from sandlot.config_errors import describe

    class Careless(BaseModel):
        key: str

        @field_validator("key")
        @classmethod
        def _check(cls, value: str) -> str:
            raise ValueError(f"key {value!r} is wrong; give another")

    with pytest.raises(ValidationError) as caught:
        Careless(key=SECRET + "\0")
    text = describe(caught.value)
    assert text == "key: key '***' is wrong; give another"


def _with_secret(value: Any, secret: str) -> Any:
    if isinstance(value, str):
        return value.replace(SECRET, secret)
    if isinstance(value, dict):
        return {key: _with_secret(item, secret) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_secret(item, secret) for item in value]
    return value


@settings(max_examples=60, deadline=None)
@given(case=st.sampled_from(BAD),
       tail=st.text(st.characters(codec="utf-8"), min_size=11, max_size=40))
def test_any_secret_in_any_variant_stays_out_of_the_error(
    case: tuple[str, Factory, dict[str, Any], str], tail: str
) -> None:
    # Quotes, backslashes, newlines, NUL, non-ASCII: no escaping lets a secret through.
    # The leading letter keeps every variant invalid (a secret starting with "/" would be a
    # valid workdir), so each example exercises an error.
    secret = "k" + tail
    _, factory, kw, _ = case
    with pytest.raises(ConfigurationError) as caught:
        factory(**_with_secret(kw, secret))
    error = caught.value
    for text in (str(error), repr(error), repr(error.args)):
        for form in (secret, repr(secret)[1:-1], secret.encode("unicode_escape").decode()):
            assert form not in text, text
