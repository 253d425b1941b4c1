"""The local backend's command environment: an allowlist of the host's, never its secrets."""

from __future__ import annotations

import pytest

import sandlot
from sandlot.backends.local_env import check_inherit_env, sandbox_environment
from sandlot.errors import ConfigurationError
from tests.helpers import require_binary

pytestmark = pytest.mark.anyio

SECRET = "s3cr3t-value-that-must-never-show-up"

HOST = {
    "PATH": "/usr/bin:/bin",
    "HOME": "/home/user",
    "LC_ALL": "C.UTF-8",
    "SSL_CERT_FILE": "/etc/ssl/ca.pem",
    "GOPROXY": "https://proxy.golang.org",
    "PIP_INDEX_URL": "https://pypi.org/simple",
    "CARGO_HOME": "/home/user/.cargo",
    # Secrets, some of them behind allowed prefixes:
    "SANDLOT_TOKEN": SECRET,
    "CODER_SESSION_TOKEN": SECRET,
    "GOOGLE_APPLICATION_CREDENTIALS": SECRET,
    "AWS_SECRET_ACCESS_KEY": SECRET,
    "NPM_CONFIG__AUTHTOKEN": SECRET,
    "PIP_PASSWORD": SECRET,
    "CARGO_REGISTRY_TOKEN": SECRET,
    "OPENAI_API_KEY": SECRET,
    "MY_APP_SETTING": "plain",
}


def test_allowlist_passes_toolchain_settings_and_drops_secrets() -> None:
    env = sandbox_environment({}, host=HOST)
    assert env == {
        "PATH": "/usr/bin:/bin",
        "HOME": "/home/user",
        "LC_ALL": "C.UTF-8",
        "SSL_CERT_FILE": "/etc/ssl/ca.pem",
        "GOPROXY": "https://proxy.golang.org",
        "PIP_INDEX_URL": "https://pypi.org/simple",
        "CARGO_HOME": "/home/user/.cargo",
    }


def test_inherit_env_adds_named_variables_and_explicit_env_wins() -> None:
    env = sandbox_environment({"HOME": "/sandbox"}, ["MY_APP_SETTING"], host=HOST)
    assert env["MY_APP_SETTING"] == "plain"
    assert env["HOME"] == "/sandbox"
    assert SECRET not in env.values()


@pytest.mark.parametrize("name", ["SANDLOT_TOKEN", "CODER_SESSION_TOKEN"])
def test_inherit_env_refuses_sandlot_secrets(name: str) -> None:
    with pytest.raises(ConfigurationError, match="sandlot secret") as caught:
        check_inherit_env([name])
    assert SECRET not in str(caught.value)
    with pytest.raises(ValueError, match="sandlot secret"):
        sandlot.local(inherit_env=[name])


@pytest.mark.parametrize("name", ["", "1ABC", "A B", "A=B", "A\nB", "-A"])
def test_inherit_env_refuses_non_names(name: str) -> None:
    with pytest.raises(ConfigurationError, match="variable names"):
        check_inherit_env([name])


@pytest.mark.parametrize("isolation", [None, "bwrap"])
async def test_commands_see_no_host_secret(
    isolation: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if isolation:
        require_binary("bwrap", "apt-get install bubblewrap")
    for name, value in HOST.items():
        if value == SECRET:
            monkeypatch.setenv(name, value)
    monkeypatch.setenv("MY_APP_SETTING", "plain")
    provider = sandlot.local(isolation=isolation, inherit_env=["MY_APP_SETTING"])  # type: ignore[arg-type]
    async with provider.session() as sandbox:
        shown = (await sandbox.exec("env", check=True)).stdout
        assert SECRET not in shown
        assert "MY_APP_SETTING=plain\n" in shown
        # A toolchain still works with the minimal environment.
        assert (await sandbox.exec(["python3", "-c", "print(6 * 7)"], check=True)).stdout == "42\n"
