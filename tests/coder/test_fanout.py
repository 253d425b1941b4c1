"""Fan-out and transient failures on the fake Coder deployment: 16 workspaces, some whose build
fails and some whose connection drops mid-command; results stay per sandbox, transient API
failures are retried, permanent ones are not, and no workspace is left (`coder list -o json`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import anyio
import pytest

from sandlot import (
    CoderBuildFailedError,
    CoderCLIError,
    CoderUnreachableError,
    ConnectionLostError,
    Sandbox,
    fanout,
)
from sandlot.backends.coder import retry
from sandlot.fanout import Slot, Stage

from .deployment import SINGLE, ArgvRecorder, FakeDeployment

pytestmark = pytest.mark.anyio


def _listed(fake: FakeDeployment) -> list[str]:
    out = fake.cli("list", "-o", "json").stdout
    return [ws["name"] for ws in json.loads(out or "[]")]


def _factory(fake: FakeDeployment, recorder: ArgvRecorder | None = None, **options: object):  # type: ignore[no-untyped-def]
    def make(slot: Slot):  # type: ignore[no-untyped-def]
        settings: dict[str, object] = {
            "template": SINGLE,
            "on_close": "delete",
            "workspace_name": f"fan-{slot.index}",
            "transient_retry_timeout": 30.0,
        }
        if recorder is not None:
            settings["coder_binary"] = str(recorder.path)
        settings.update(options)
        return fake.provider(**settings)

    return make


async def test_sixteen_workspaces_with_failing_builds_and_dropped_connections(
    fake: FakeDeployment,
) -> None:
    broken_builds = {3, 9, 14}
    dropped = {5, 11}
    for index in broken_builds:
        fake.fake.fail_next_build("terraform apply: exit status 1", workspace=f"fan-{index}")
    for index in dropped:
        fake.fake.drop_connection_on("DROP-HERE", workspace=f"fan-{index}")
    # A busy deployment on top: some creates are rate limited, some lists hit a proxy's 503.
    fake.fake.fail_api_transiently("create", "rate_limited", times=2)
    fake.fake.fail_api_transiently("list", "unavailable", times=2)

    async def job(sandbox: Sandbox, slot: Slot) -> str:
        await sandbox.exec(f"echo {slot.index} > mine.txt", check=True)
        if slot.index in dropped:
            await sandbox.exec("echo DROP-HERE; sleep 5")
        result = await sandbox.exec("cat mine.txt; ls", check=True)
        return result.stdout.strip()

    with anyio.fail_after(600):
        report = await fanout.run(
            job, _factory(fake), n=16, max_parallel=8, max_creating=4
        )
    by_stage = {o.index: o.stage for o in report.outcomes}
    assert {i for i, s in by_stage.items() if s is Stage.FAILED} == broken_builds | dropped
    for outcome in report.outcomes:
        if outcome.index in broken_builds:
            assert isinstance(outcome.error, CoderBuildFailedError), outcome.error
            assert outcome.sandbox is None
        elif outcome.index in dropped:
            assert isinstance(outcome.error, ConnectionLostError), outcome.error
            assert outcome.closed
        else:
            assert outcome.value == f"{outcome.index}\nmine.txt", outcome.value
            assert outcome.sandbox == f"{fake.username}/fan-{outcome.index}" or (
                outcome.sandbox and outcome.sandbox.endswith(f"fan-{outcome.index}")
            )
            assert outcome.on_close == "delete" and outcome.closed
    assert _listed(fake) == []
    counts = report.to_json()["counts"]
    assert counts == {"done": 11, "failed": 5}


async def test_cancelled_during_creation_leaves_no_workspace(fake: FakeDeployment) -> None:
    # Agents take a long time to connect: every sandbox is still being created when stopped.
    fake.fake.set_agent_connects_late(seconds=300)
    stop = anyio.Event()
    creating: set[int] = set()

    def on_event(event: fanout.FanoutEvent) -> None:
        if event.stage is Stage.CREATING:
            creating.add(event.slot.index)

    async def job(sandbox: Sandbox, slot: Slot) -> None:
        raise AssertionError("no sandbox should get ready")

    async def stop_when_builds_exist() -> None:
        # Polls the deployment itself: no event tells when its builds exist.
        while len(await anyio.to_thread.run_sync(_listed, fake)) < 4:  # noqa: ASYNC110
            await anyio.sleep(0.2)
        stop.set()

    with anyio.fail_after(300):
        async with anyio.create_task_group() as group:
            group.start_soon(stop_when_builds_exist)
            report = await fanout.run(
                job, _factory(fake), n=6, max_parallel=4, on_event=on_event, stop=stop
            )
    assert report.cancelled
    assert creating == {0, 1, 2, 3}  # the other two never started
    assert all(o.stage is Stage.CANCELLED for o in report.outcomes)
    assert _listed(fake) == []


async def test_transient_failures_are_retried_and_logged(
    fake: FakeDeployment, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = ArgvRecorder(fake.binary, tmp_path)
    fake.fake.fail_api_transiently("create", "bad_gateway", times=1)
    fake.fake.fail_api_transiently("create", "refused", times=1)  # coderd restarting
    caplog.set_level(logging.WARNING, logger="sandlot.coder")
    provider = _factory(fake, recorder)(Slot(0, "x"))
    async with provider.session() as sandbox:
        assert (await sandbox.exec("echo ok")).stdout == "ok\n"
    assert recorder.verbs().count("create") == 2 or recorder.verbs().count("create") == 3
    retried = [r.getMessage() for r in caplog.records if "failed transiently" in r.getMessage()]
    assert retried and "coder create fan-0" in retried[0]
    assert _listed(fake) == []


async def test_permanent_failures_are_not_retried(fake: FakeDeployment, tmp_path: Path) -> None:
    recorder = ArgvRecorder(fake.binary, tmp_path)
    provider = _factory(fake, recorder, template="no-such-template")(Slot(0, "x"))
    with pytest.raises(CoderCLIError, match="no-such-template"):
        await provider.create()
    assert recorder.verbs().count("create") == 1


async def test_refused_at_first_contact_fails_at_once(fake: FakeDeployment, tmp_path: Path) -> None:
    retry._reached.clear()  # this process has not reached the deployment yet
    recorder = ArgvRecorder(fake.binary, tmp_path)
    fake.fake.fail_api_transiently("whoami", "refused", times=5)
    provider = _factory(fake, recorder)(Slot(0, "x"))
    with pytest.raises(CoderUnreachableError, match="connection refused"):
        await provider.create()
    assert recorder.verbs().count("whoami") == 1


async def test_retries_are_bounded(fake: FakeDeployment, tmp_path: Path) -> None:
    recorder = ArgvRecorder(fake.binary, tmp_path)
    fake.fake.fail_api_transiently("create", "rate_limited", times=100)
    provider = _factory(fake, recorder, transient_retry_timeout=2.0)(Slot(0, "x"))
    with pytest.raises(CoderCLIError, match="rate limited"):
        await provider.create()
    assert 2 <= recorder.verbs().count("create") <= retry.MAX_ATTEMPTS
    assert _listed(fake) == []


async def test_no_session_token_in_report_logs_or_errors(
    fake: FakeDeployment, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake.fake.fail_next_build("terraform apply: exit status 1", workspace="fan-1")
    fake.fake.fail_api_transiently("create", "rate_limited", times=1)

    async def job(sandbox: Sandbox, slot: Slot) -> str:
        return (await sandbox.exec("echo ok", check=True)).stdout

    report = await fanout.run(job, _factory(fake), n=2, max_parallel=2)
    assert [o.stage for o in report.outcomes] == [Stage.DONE, Stage.FAILED]
    text = "\n".join([
        json.dumps(report.to_json()), repr(report), caplog.text,
        *(f"{o.error!r} {o.error}" for o in report.outcomes),
    ])
    token = fake.token
    leaked = [token[i : i + 12] for i in range(len(token) - 11) if token[i : i + 12] in text]
    assert not leaked, leaked
