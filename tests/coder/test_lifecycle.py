"""The coder backend's lifecycle against a deployment: create, attach, agents, workdir, close.

Only the `coder` CLI and the sandbox API are used, so these bodies run unchanged on the fake
and on a real Coder server (the `deployment` fixture runs each on both). Every test leaves the
deployment as it found it (conftest checks), deleting what it made on purpose with the CLI.
"""

from __future__ import annotations

import logging
import secrets
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest

from sandlot import CoderAgentSelectionError, CoderCLIError
from sandlot.backends.coder.sandbox import CoderSandbox
from sandlot.testing.deployment import RELEASES
from tests.realcoder.harness import pinned_version

from .deployment import MULTI, PARAMS, PLAIN, SINGLE, ArgvRecorder, Deployment

pytestmark = pytest.mark.anyio


async def _exists(
    deployment: Deployment, name: str, also: Callable[[], bool] = lambda: False
) -> None:
    """Return once workspace `name` shows in `coder list` (or `also()` holds)."""
    for _ in range(2400):
        if also() or await anyio.to_thread.run_sync(deployment.find, name) is not None:
            return
        await anyio.sleep(0.05)
    raise AssertionError(f"workspace {name} never appeared")


def fresh_name(prefix: str = "t") -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


@pytest.fixture
def recorder(deployment: Deployment, tmp_path: Path) -> ArgvRecorder:
    return ArgvRecorder(deployment.binary, tmp_path)


@pytest.fixture
def made(deployment: Deployment) -> Iterator[list[str]]:
    """Names of workspaces a test made outside sandlot; deleted afterwards."""
    names: list[str] = []
    yield names
    for name in names:
        deployment.delete_quietly(name)


async def test_create_passes_only_the_flags_that_are_set(
    deployment: Deployment, recorder: ArgvRecorder
) -> None:
    name = fresh_name("min")
    provider = deployment.provider(
        template=deployment.template(SINGLE), workspace_name=name, on_close="delete",
        coder_binary=str(recorder.path),
    )
    async with provider.session() as sandbox:
        assert isinstance(sandbox, CoderSandbox)
        assert sandbox.workspace == f"{deployment.username}/{name}"
        assert (await sandbox.exec("echo hi")).stdout == "hi\n"
    creates = [c for c in recorder.calls() if c[0] == "create"]
    assert creates == [["create", name, "--template", deployment.template(SINGLE), "--yes"]]
    assert recorder.verbs()[0] == "whoami"  # the preflight comes first
    assert deployment.find(name) is None


async def test_create_with_every_option(
    deployment: Deployment, recorder: ArgvRecorder, tmp_path: Path
) -> None:
    template = deployment.template(PARAMS)
    assert deployment.template_versions and deployment.organization, deployment
    version = deployment.template_versions[0]
    parameter_file = tmp_path / "params.yaml"
    parameter_file.write_text("size: m\n")
    name = fresh_name("all")
    provider = deployment.provider(
        template=template,
        template_version=version,
        parameters={"region": "us"},
        parameter_file=str(parameter_file),
        preset="fast",
        organization=deployment.organization,
        workspace_name=name,
        on_close="delete",
        coder_binary=str(recorder.path),
    )
    async with provider.session():
        ws = deployment.find(name)
        assert ws is not None
        assert ws["latest_build"]["template_version_name"] == version
    [create] = [c for c in recorder.calls() if c[0] == "create"]
    assert create == [
        "create", name, "--template", template, "--template-version", version,
        "--parameter", "region=us", "--rich-parameter-file", str(parameter_file),
        "--preset", "fast", "--org", deployment.organization, "--yes",
    ]  # fmt: skip
    # (--use-parameter-defaults exists from v2.28 on: tests/coder/test_releases.py)
    assert deployment.find(name) is None


async def test_use_parameter_defaults_as_the_release_has_it(deployment: Deployment) -> None:
    """`--use-parameter-defaults` exists from v2.28 on: on v2.30.0 (the pin, and the fake's
    default) the defaults are taken and the workspace is made; on v2.27.0 (the oldest
    supported, scripts/coder-version-oldest) the option gives a typed error that says to
    upgrade, and no workspace is made."""
    name = fresh_name("dflt")
    provider = deployment.provider(
        template=deployment.template(PARAMS), preset="none", use_parameter_defaults=True,
        workspace_name=name, on_close="delete",
    )  # fmt: skip
    release = pinned_version() if deployment.kind == "real" else RELEASES[0]
    if release == "v2.27.0":
        with pytest.raises(
            CoderCLIError,
            match=r"does not know the flag --use-parameter-defaults.*upgrade the coder",
        ):
            await provider.create()
    else:
        async with provider.session() as sandbox:
            assert (await sandbox.exec("true")).exit_code == 0
    assert deployment.find(name) is None


async def test_attach_by_every_reference(
    deployment: Deployment, tmp_path: Path, made: list[str]
) -> None:
    name = fresh_name("att")
    made.append(name)
    ws = deployment.create_workspace(name, deployment.template(SINGLE))
    forms = {
        "name": {"workspace": name},
        "owner-slash-name": {"workspace": f"{deployment.username}/{name}"},
        "owner-option": {"workspace": name, "owner": deployment.username},
        "uuid": {"workspace": ws["id"]},
    }
    for form, options in forms.items():
        (tmp_path / form).mkdir(parents=True)
        recorder = ArgvRecorder(deployment.binary, tmp_path / form)
        provider = deployment.provider(on_close="leave", coder_binary=str(recorder.path),
                                       **options)
        async with provider.session() as sandbox:
            assert isinstance(sandbox, CoderSandbox)
            assert sandbox.workspace_id == ws["id"], form
            assert (await sandbox.exec("echo attached")).stdout == "attached\n"
        # A running workspace is used as it is: never created, started, stopped or deleted.
        assert not {"create", "start", "stop", "delete"} & set(recorder.verbs()), form
        # Every command names the workspace as owner/name, whatever form was given.
        [ssh] = [c for c in recorder.calls() if c[0] == "ssh"]
        assert ssh == [
            "ssh", "--stdio", "--disable-autostart", f"{deployment.username}/{name}.main"
        ], form
    assert deployment.status(name) == "running"


async def test_attach_starts_a_stopped_workspace_and_stop_restores_it(
    deployment: Deployment, recorder: ArgvRecorder, made: list[str]
) -> None:
    name = fresh_name("stp")
    made.append(name)
    deployment.create_workspace(name, deployment.template(SINGLE))
    deployment.cli("stop", name, "--yes")
    assert deployment.status(name) == "stopped"
    provider = deployment.provider(
        workspace=name, on_close="stop", coder_binary=str(recorder.path)
    )
    async with provider.session() as sandbox:
        assert deployment.status(name) == "running"
        assert (await sandbox.exec("echo up")).stdout == "up\n"
    assert deployment.status(name) == "stopped"
    reference = f"{deployment.username}/{name}"
    lifecycle = [c for c in recorder.calls() if c[0] in ("start", "stop", "delete")]
    assert lifecycle == [["start", reference, "--yes"], ["stop", reference, "--yes"]]


@pytest.mark.parametrize("on_close", ["delete", "stop", "leave"])
async def test_on_close_is_applied_exactly(
    deployment: Deployment,
    recorder: ArgvRecorder,
    made: list[str],
    on_close: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    name = fresh_name(on_close)
    made.append(name)  # deleted afterwards whatever on_close left
    provider = deployment.provider(
        template=deployment.template(SINGLE), workspace_name=name, on_close=on_close,
        coder_binary=str(recorder.path),
    )
    async with provider.session() as sandbox:
        await sandbox.exec("true", check=True)
        before_close = len(recorder.calls())
        assert isinstance(sandbox, CoderSandbox)
        # What `coder ssh` leaves in the host's temporary directory (cli/ssh.go), per workspace.
        lock = Path(tempfile.gettempdir()) / f"coder-autostop-notify-{sandbox.workspace_id}"
        assert lock.is_file()
    expected = {"delete": None, "stop": "stopped", "leave": "running"}[on_close]
    assert deployment.status(name) == expected
    # Gone with the workspace; kept while the workspace is (coder would use it again).
    assert lock.exists() == (on_close != "delete")
    lock.unlink(missing_ok=True)
    closing = recorder.calls()[before_close:]
    reference = f"{deployment.username}/{name}"
    if on_close == "leave":
        assert closing == []
    else:
        # The workspace reference, never `<workspace>.<agent>`.
        assert closing == [[on_close, reference, "--yes"]]
    # The token went to the CLI in its environment only: not in any argv, nor any log line.
    assert all(deployment.token not in arg for call in recorder.calls() for arg in call)
    assert deployment.token not in caplog.text
    assert name in caplog.text  # the log does talk about the workspace


async def test_several_agents_need_a_name(deployment: Deployment, made: list[str]) -> None:
    template = deployment.template(MULTI)
    name = fresh_name("multi")
    provider = deployment.provider(template=template, workspace_name=name, on_close="delete")
    with pytest.raises(CoderAgentSelectionError) as caught:
        await provider.create()
    assert "choose one with agent=" in str(caught.value)
    assert sorted(caught.value.available) == ["aux", "main"]
    assert "aux" in str(caught.value) and "main" in str(caught.value)
    assert deployment.find(name) is None  # on_close="delete" applied to the failed create

    name = fresh_name("multi")
    made.append(name)
    deployment.create_workspace(name, template)
    wrong = deployment.provider(workspace=name, agent="nope", on_close="leave")
    with pytest.raises(CoderAgentSelectionError, match=r"no agent named 'nope'.*aux"):
        await wrong.create()
    chosen = deployment.provider(workspace=name, agent="aux", on_close="leave")
    async with chosen.session() as sandbox:
        assert isinstance(sandbox, CoderSandbox) and sandbox.agent == "aux"
        result = await sandbox.exec(["printenv", "CODER_WORKSPACE_AGENT_NAME"])
        assert result.stdout == "aux\n"
    assert deployment.status(name) == "running"


async def test_attach_failure_puts_a_stopped_workspace_back(
    deployment: Deployment, made: list[str]
) -> None:
    """A failed attach never deletes someone's workspace: it stops it again, as it was."""
    name = fresh_name("back")
    made.append(name)
    deployment.create_workspace(name, deployment.template(MULTI))
    deployment.cli("stop", name, "--yes")
    provider = deployment.provider(workspace=name, on_close="delete")  # no agent named
    with pytest.raises(CoderAgentSelectionError):
        await provider.create()
    assert deployment.status(name) == "stopped"


async def test_default_worktree_is_under_the_agent_directory(deployment: Deployment) -> None:
    async with deployment.provider(
        template=deployment.template(SINGLE), on_close="delete"
    ).session() as sandbox:
        assert isinstance(sandbox, CoderSandbox)
        ws = deployment.find(sandbox.workspace_name)
        assert ws is not None
        [agent] = [a for r in ws["latest_build"]["resources"] for a in r.get("agents") or []]
        base = agent.get("expanded_directory") or agent["directory"]
        assert sandbox.worktree == f"{base}/.sandlot/worktree"
        assert (await sandbox.exec("pwd")).stdout == sandbox.worktree + "\n"


async def test_default_worktree_without_an_agent_directory_is_under_home(
    deployment: Deployment,
) -> None:
    async with deployment.provider(
        template=deployment.template(PLAIN), on_close="delete"
    ).session() as sandbox:
        home = (await sandbox.exec("printf %s \"$HOME\"")).stdout
        assert home.startswith("/")
        assert sandbox.worktree == f"{home}/.sandlot/worktree"
        assert (await sandbox.exec(["test", "-d", sandbox.worktree])).exit_code == 0


async def test_explicit_workdir_and_env(deployment: Deployment) -> None:
    root = f"/tmp/sandlot-test-{secrets.token_hex(4)}"
    workdir = f"{root}/custom dir/wt"
    async with deployment.provider(
        template=deployment.template(SINGLE), on_close="delete", workdir=workdir,
        env={"SANDLOT_FROM_OPTIONS": "opt", "SHARED": "options"},
    ).session() as sandbox:
        try:
            assert sandbox.worktree == workdir
            assert (await sandbox.exec("pwd")).stdout == workdir + "\n"
            result = await sandbox.exec(
                'printf "%s %s" "$SANDLOT_FROM_OPTIONS" "$SHARED"', env={"SHARED": "call"}
            )
            assert result.stdout == "opt call"  # the call's env wins over the options'
        finally:
            await sandbox.exec(["rm", "-rf", root])


async def test_a_cancelled_create_still_applies_on_close(deployment: Deployment) -> None:
    """Cancel `create()` once the workspace exists (mid-flow): it is deleted anyway."""
    name = fresh_name("cancel")
    provider = deployment.provider(
        template=deployment.template(SINGLE), workspace_name=name, on_close="delete"
    )
    sandboxes = []

    async def create() -> None:
        sandboxes.append(await provider.create())

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(create)
            await _exists(deployment, name, also=lambda: bool(sandboxes))
            group.cancel_scope.cancel()
    for sandbox in sandboxes:  # create() won the race: close it the normal way
        await sandbox.close()
    assert deployment.find(name) is None


async def test_a_cancelled_session_during_create_applies_on_close(
    deployment: Deployment,
) -> None:
    name = fresh_name("scancel")
    provider = deployment.provider(
        template=deployment.template(SINGLE), workspace_name=name, on_close="delete"
    )
    entered = False
    if deployment.kind == "fake":
        # The fake's agent is ready a moment after its workspace shows in `coder list`; on a
        # loaded machine the poll below could see it only after the session was entered.
        # Holding the agent at `connecting` keeps the cancel inside the create, as intended.
        deployment.fake.set_agent_connects_late(seconds=60, workspace=name)

    async def use() -> None:
        nonlocal entered
        async with provider.session():
            entered = True
            await anyio.sleep_forever()

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            group.start_soon(use)
            await _exists(deployment, name)
            group.cancel_scope.cancel()
    assert deployment.find(name) is None
    assert not entered  # cancelled before the body ran: the workspace was still being made
