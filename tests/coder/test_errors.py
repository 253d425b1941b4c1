"""Typed errors that say what to do: missing CLI, not logged in, bad token, bad URL, no such
workspace. Each fails at the preflight (or the lookup), before any workspace exists."""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

import sandlot
from sandlot import (
    CoderCLINotFoundError,
    CoderNotLoggedInError,
    CoderUnreachableError,
    CoderWorkspaceNotFoundError,
    ToolNotFoundError,
)

from .deployment import SINGLE, ArgvRecorder, Deployment

pytestmark = pytest.mark.anyio


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.parametrize("binary", ["/nonexistent/dir/coder", "sandlot-no-such-coder-cli"])
async def test_missing_cli(deployment: Deployment, binary: str) -> None:
    provider = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                   coder_binary=binary)
    with pytest.raises(CoderCLINotFoundError, match="install the Coder CLI") as caught:
        await provider.create()
    assert isinstance(caught.value, ToolNotFoundError)
    assert "coder_binary" in str(caught.value)


async def test_cli_that_cannot_run(deployment: Deployment, tmp_path: Path) -> None:
    not_executable = tmp_path / "coder"
    not_executable.write_text("#!/bin/sh\n")
    provider = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                   coder_binary=str(not_executable))
    with pytest.raises(CoderCLINotFoundError):
        await provider.create()


async def test_not_logged_in(
    deployment: Deployment, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No URL and no token anywhere: an empty config dir, nothing in the environment.
    monkeypatch.delenv("CODER_URL", raising=False)
    monkeypatch.delenv("CODER_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("CODER_CONFIG_DIR", str(tmp_path / "empty-config"))
    recorder = ArgvRecorder(deployment.binary, tmp_path)
    provider = sandlot.coder(template=deployment.template(SINGLE), on_close="delete",
                             coder_binary=str(recorder.path))
    with pytest.raises(CoderNotLoggedInError, match="coder login") as caught:
        await provider.create()
    assert "session_token" in str(caught.value)
    # The preflight stopped everything (older releases need a second, plain whoami).
    assert set(recorder.verbs()) == {"whoami"}


async def test_rejected_token(deployment: Deployment, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    bogus = "Zyxwvutsrq-bogusbogusbogusbogus12"
    provider = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                   session_token=bogus)
    with pytest.raises(CoderNotLoggedInError, match="rejected the session token") as caught:
        await provider.create()
    assert bogus not in str(caught.value) and bogus not in repr(caught.value)
    assert bogus not in caplog.text


async def test_unreachable_url(deployment: Deployment) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    provider = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                   coder_url=url)
    with pytest.raises(CoderUnreachableError, match="cannot reach the Coder deployment") as caught:
        await provider.create()
    assert url in str(caught.value) and "coder_url" in str(caught.value)


@pytest.mark.parametrize("ref", ["no-such-ws", "{user}/no-such-ws",
                                 "6f1c1f0e-7a86-4e0c-9d43-3c1f2d2b9e51"])
async def test_attach_to_a_workspace_that_does_not_exist(
    deployment: Deployment, ref: str
) -> None:
    provider = deployment.provider(workspace=ref.format(user=deployment.username),
                                   on_close="delete")
    with pytest.raises(CoderWorkspaceNotFoundError, match="coder list"):
        await provider.create()


async def test_a_template_that_does_not_exist(deployment: Deployment) -> None:
    provider = deployment.provider(template="no-such-template", on_close="delete")
    with pytest.raises(sandlot.CoderCLIError, match="no-such-template") as caught:
        await provider.create()
    assert caught.value.exit_code == 1
    assert "no-such-template" in caught.value.stderr


async def test_an_existing_name_is_never_adopted(
    deployment: Deployment, tmp_path: Path
) -> None:
    name = "taken-name"
    deployment.create_workspace(name, deployment.template(SINGLE))
    try:
        recorder = ArgvRecorder(deployment.binary, tmp_path)
        provider = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                       workspace_name=name, coder_binary=str(recorder.path))
        with pytest.raises(sandlot.CoderCLIError, match=r"already exists.*workspace='taken-name'"):
            await provider.create()
        assert "delete" not in recorder.verbs() and "create" not in recorder.verbs()
        assert deployment.status(name) == "running"  # untouched
    finally:
        deployment.delete_quietly(name)


def _old_cli(real: Path, directory: Path) -> Path:
    """A `coder` that rejects `whoami -o json` as releases before it do (v2.26.0's text).

    Plain `coder whoami` and everything else go to the deployment's own CLI.
    """
    shim = directory / "coder"
    shim.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = whoami ] && [ "$2" = -o ]; then\n'
        "  echo 'parsing flags ([whoami -o json]) for \"coder whoami\": unknown shorthand flag:"
        " '\"'\"'o'\"'\"' in -o' >&2; exit 1\n"
        "fi\n"
        f'exec {real} "$@"\n'
    )
    shim.chmod(0o755)
    return shim


async def test_a_cli_without_whoami_json(deployment: Deployment, tmp_path: Path) -> None:
    shim = _old_cli(deployment.binary, tmp_path)
    async with deployment.provider(
        template=deployment.template(SINGLE), on_close="delete", coder_binary=str(shim)
    ).session() as sandbox:
        assert sandbox.workspace.startswith(f"{deployment.username}/")
        assert (await sandbox.exec("echo old")).stdout == "old\n"
    # Not logged in: the plain whoami's own error is the one reported.
    bogus = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                coder_binary=str(shim), session_token="Zyxwvutsrq-bogus12345")
    with pytest.raises(CoderNotLoggedInError):
        await bogus.create()


def test_whoami_text_form() -> None:
    from sandlot.backends.coder.models import ParseError, parse_whoami_text

    me = parse_whoami_text(
        "\x1b[1m^ \x1b[0mCoder is running at \x1b[36mhttps://coder.example.com\x1b[0m, "
        "You're authenticated as \x1b[36malice\x1b[0m !\n"
    )
    assert (me.username, me.url) == ("alice", "https://coder.example.com")
    with pytest.raises(ParseError):
        parse_whoami_text("something else\n")


async def test_an_unknown_flag_says_to_upgrade(deployment: Deployment, tmp_path: Path) -> None:
    shim = tmp_path / "coder"
    shim.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" --use-parameter-defaults "*)\n'
        "  echo 'unknown flag: --use-parameter-defaults' >&2; exit 1;; esac\n"
        f'exec {deployment.binary} "$@"\n'
    )
    shim.chmod(0o755)
    provider = deployment.provider(template=deployment.template(SINGLE), on_close="delete",
                                   use_parameter_defaults=True, coder_binary=str(shim))
    with pytest.raises(sandlot.CoderCLIError, match=r"does not know the flag "
                       r"--use-parameter-defaults.*upgrade the coder CLI"):
        await provider.create()
