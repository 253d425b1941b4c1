"""`Secret` never shows its value: repr, str, f-strings, format, pydantic dumps, pickles,
provider options, logs and errors; named secrets come from the host environment or a file."""

from __future__ import annotations

import ast
import json
import logging
import pickle
from pathlib import Path

import pytest
from pydantic import BaseModel

import sandlot
from sandlot import ConfigurationError, Secret
from sandlot.backends.local_env import sandbox_environment
from sandlot.secrets import GLOBAL, SecretSet, secret_from_spec, secrets_from_specs
from sandlot.secrets.registry import LOGGERS

VALUE = "ghp_0123456789abcdefVALUE"


def test_every_way_python_turns_it_into_text_is_redacted() -> None:
    secret = Secret(VALUE, name="GH_TOKEN")
    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", f"{secret:>40}",
             "%s" % secret, format(secret), repr([secret]), repr({"k": secret})]  # noqa: UP031
    for text in shown:
        assert VALUE not in text and "[secret:GH_TOKEN]" in text
    assert secret.reveal() == VALUE and secret.get_secret_value() == VALUE
    with pytest.raises(TypeError):
        json.dumps(secret)  # not a str subclass: serializers cannot copy it by accident
    with pytest.raises(TypeError):
        pickle.dumps(secret)
    assert Secret(VALUE) == Secret(VALUE, name="X") and len(secret) == len(VALUE)


def test_pydantic_dumps_and_options_hide_it() -> None:
    class Model(BaseModel):
        token: Secret
        env: dict[str, str | Secret]

    model = Model(token=Secret(VALUE, name="T"), env={"A": "plain", "B": Secret(VALUE)})
    for dumped in (model.model_dump_json(), json.dumps(model.model_dump(mode="json")),
                   repr(model), str(model.model_dump())):
        assert VALUE not in dumped
    assert Model.model_validate_json('{"token": "x", "env": {}}').token.reveal() == "x"
    options = sandlot.local(env={"TOKEN": Secret(VALUE)}).options
    assert VALUE not in repr(options) and VALUE not in options.model_dump_json()
    docker = sandlot.DockerOptions(image="x", on_close="delete", env={"T": Secret(VALUE)})
    assert VALUE not in repr(docker) and VALUE not in docker.model_dump_json()


@pytest.mark.parametrize("bad", ["", "a\0b"])
def test_unusable_values_are_refused(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        Secret(bad)


def test_names_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="secret name"):
        Secret("v", name="no spaces")


def test_secret_specs_read_the_host_environment_or_a_file(tmp_path: Path) -> None:
    host = {"NPM_TOKEN": "npm-value", "OTHER": "other-value"}
    assert secret_from_spec("NPM_TOKEN", "--secret", host).reveal() == "npm-value"
    named = secret_from_spec("TOKEN=OTHER", "--secret", host)
    assert (named.name, named.reveal()) == ("TOKEN", "other-value")
    path = tmp_path / "token"
    path.write_text("file-value\n")
    assert secret_from_spec(f"F=@{path}", "--secret", host).reveal() == "file-value"
    with pytest.raises(ConfigurationError, match="MISSING is not set") as missing:
        secret_from_spec("MISSING", "--secret", host)
    assert "npm-value" not in str(missing.value)
    with pytest.raises(ConfigurationError, match="given twice"):
        secrets_from_specs(["NPM_TOKEN", "NPM_TOKEN=OTHER"], "--secret", host)
    with pytest.raises(ConfigurationError, match="cannot read"):
        secret_from_spec(f"F=@{tmp_path / 'nope'}", "--secret", host)


def test_a_secret_set_names_each_value_after_its_variable() -> None:
    box = SecretSet()
    env = box.reveal_env({"A": Secret("value-one"), "B": "plain"})
    assert env == {"A": "value-one", "B": "plain"}
    assert box.names == ["A"]
    assert box.scrubber.text("x value-one y") == "x [secret:A] y"


def test_error_messages_and_logs_are_scrubbed(caplog: pytest.LogCaptureFixture) -> None:
    value = "log-leak-" + "9" * 16
    GLOBAL.add(Secret(value, name="LOGGED"))
    assert value not in str(ConfigurationError(f"bad value {value}"))
    with caplog.at_level(logging.DEBUG, logger="sandlot"):
        for name in LOGGERS:
            logging.getLogger(name).warning("token is %s", value)
    assert caplog.records and value not in caplog.text
    assert caplog.text.count("[secret:LOGGED]") == len(LOGGERS)


def test_every_logger_in_the_source_is_filtered() -> None:
    used: set[str] = set()
    for path in Path(sandlot.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "getLogger"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                used.add(str(node.args[0].value))
    assert {name for name in used if name.startswith("sandlot")} <= set(LOGGERS)


def test_local_env_drops_inherited_values_that_carry_credentials(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = {
        "PATH": "/usr/bin",
        "PIP_INDEX_URL": "https://user:hunter2@pypi.internal/simple",
        "PIP_EXTRA_INDEX_URL": "https://pypi.org/simple https://tok3n@git.internal/simple",
        "HTTPS_PROXY": "http://proxyuser:pw@proxy:3128",
        "http_proxy": "http://proxy:3128",
        "NPM_CONFIG__AUTH": "x",  # by name already
        "NODE_OPTIONS": "--max-old-space-size=4096",
        "UV_INDEX_URL": "https://pypi.org/simple",
        "CARGO_HTTP_EXTRA": "Authorization: Bearer abc",
        "PYTHONWARNINGS": "Bearer abcdef",
    }
    with caplog.at_level(logging.DEBUG, logger="sandlot.local"):
        env = sandbox_environment({"EXPLICIT": "https://u:p@x/"}, host=host)
    assert env == {"PATH": "/usr/bin", "http_proxy": "http://proxy:3128",
                   "NODE_OPTIONS": "--max-old-space-size=4096",
                   "UV_INDEX_URL": "https://pypi.org/simple", "EXPLICIT": "https://u:p@x/"}
    dropped = "CARGO_HTTP_EXTRA, HTTPS_PROXY, PIP_EXTRA_INDEX_URL, PIP_INDEX_URL, PYTHONWARNINGS"
    assert dropped in caplog.text
    assert "hunter2" not in caplog.text and "tok3n" not in caplog.text
