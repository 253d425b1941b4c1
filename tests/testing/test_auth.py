"""whoami, login state and URL handling of the fake `coder` (cli/whoami.go, cli/root.go)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .support import Coder

HEAD = 'Encountered an error running "coder {0}", see "coder {0} --help" for more information'


def test_whoami_json_is_a_one_element_array(coder: Coder) -> None:
    result = coder.ok("whoami", "-o", "json")
    assert not result.stdout.endswith("\n")  # cli/whoami.go writes the formatter output as is
    rows = json.loads(result.stdout)
    assert isinstance(rows, list) and len(rows) == 1
    row = rows[0]
    assert list(row) == ["url", "username", "user_id", "organization_ids", "roles"]
    assert row["url"] == coder.deployment.url
    assert row["username"] == coder.deployment.username
    assert row["roles"] == {"*": ["Owner"]}
    assert len(row["organization_ids"]) == 1


def test_not_logged_in(coder: Coder) -> None:
    env = {**os.environ, **coder.deployment.env(logged_in=False)}
    for key in ("CODER_URL", "CODER_SESSION_TOKEN"):
        env.pop(key, None)
    result = coder.run("whoami", "-o", "json", env=env)
    assert result.code == 1
    assert result.stdout == ""
    assert result.stderr == (
        HEAD.format("whoami")
        + f"\nerror: You are not logged in. Try logging in using '{coder.exe.resolve()} "
        "login <url>'.\n"
    )


def test_unreachable_url_is_a_dial_error(coder: Coder) -> None:
    env = {**coder.env, "CODER_URL": "http://127.0.0.1:1"}
    result = coder.run("whoami", "-o", "json", env=env)
    assert result.code == 1
    assert result.stderr.splitlines()[1] == (
        'error: Get "http://127.0.0.1:1/api/v2/users/me": '
        "dial tcp 127.0.0.1:1: connect: connection refused"
    )
    env["CODER_URL"] = "https://nowhere.invalid"
    result = coder.run("list", "-o", "json", env=env)
    assert result.stderr.splitlines()[1] == (
        'error: query workspaces: Get "https://nowhere.invalid/api/v2/workspaces?q=owner%3Ame":'
        " dial tcp: lookup nowhere.invalid: no such host"
    )


def test_revoked_or_missing_token_is_a_401(coder: Coder) -> None:
    coder.deployment.revoke_sessions()
    result = coder.run("whoami", "-o", "json")
    assert result.code == 1
    assert result.stderr == (
        HEAD.format("whoami") + "\nerror: You are signed out or your session has expired. "
        "Please sign in again to continue.\nSuggestion: Try logging in using 'coder login'.\n"
    )
    coder.deployment.restore_sessions()
    assert coder.run("whoami", "-o", "json").code == 0
    env = {k: v for k, v in coder.env.items() if k != "CODER_SESSION_TOKEN"}
    env["CODER_CONFIG_DIR"] = str(coder.deployment.root / "empty-config")
    result = coder.run("list", "-o", "json", env=env)
    assert result.code == 1
    assert "Trace=[query workspaces: ]\nYou are signed out" in result.stderr


def test_global_config_dir_holds_url_and_session(coder: Coder, tmp_path: Path) -> None:
    config = coder.deployment.write_config(tmp_path / "cfg")
    env = {k: v for k, v in coder.env.items() if not k.startswith("CODER_")}
    # config-ssh puts --global-config before the subcommand; it must work there too
    result = coder.run("--global-config", str(config), "whoami", "-o", "json", env=env)
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)[0]["username"] == coder.deployment.username
    env["CODER_CONFIG_DIR"] = str(config)
    assert coder.run("whoami", "-o", "json", env=env).code == 0


def test_token_never_printed(coder: Coder) -> None:
    token = coder.deployment.token
    assert token not in repr(coder.deployment)
    result = coder.run("create", "bad_name", "-t", "docker", "--yes")
    assert token not in result.stdout + result.stderr
