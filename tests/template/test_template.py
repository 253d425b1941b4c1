"""sandlot on workspaces the shipped template (providers/coder) makes, through the public API only.

Each workspace costs a Terraform apply and a container start, so one workspace carries most
checks (create with a preset and a parameter -> what reached the container -> exec, copy,
forward, durable processes, verify -> stop -> attach by name -> delete), in order.
"""

from __future__ import annotations

import hashlib
import os
import urllib.request
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import TypeVar

import anyio
import pytest

import sandlot
from sandlot import verify
from sandlot.errors import CoderBuildFailedError, ConnectionLostError

from .harness import TemplateCoder

# The tier's own marker: the default run leaves it out, scripts/test runs it on its own.
pytestmark = [pytest.mark.anyio, pytest.mark.template]

REPO = Path(__file__).resolve().parents[2]
PROJECT = "/home/coder/project"
T = TypeVar("T")
#: CI, then the CPU quota and period, then the memory limit, from cgroup v2 or v1 files.
CGROUP_LIMITS = """
echo "CI=$CI"
if [ -f /sys/fs/cgroup/cpu.max ]; then
  cat /sys/fs/cgroup/cpu.max; cat /sys/fs/cgroup/memory.max
else
  echo "$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"
  cat /sys/fs/cgroup/memory/memory.limit_in_bytes
fi
"""
VERIFY_PROJECTS = (
    REPO / "examples" / "intstats",  # Go
    REPO / "examples" / "wordcount",  # Python
    REPO / "tests" / "fixtures" / "verify" / "node",
    REPO / "tests" / "fixtures" / "verify" / "rust",
)


async def _local_counts(project: Path) -> tuple[int, int]:
    """(passed, failed) of the project's tests on the local backend, the reference."""
    async with sandlot.local().session() as box:
        await box.copy_in(project, box.worktree)
        report = await verify.run_tests(box, root=box.worktree)
    return report.passed, report.failed


def _provider(coder: TemplateCoder, **options: object) -> sandlot.IsolatedSandboxProvider:
    # A keepalive bound of 20 s: a stalled fresh connection (adr/0029) is told in 20 s, not 60.
    return sandlot.coder(  # type: ignore[arg-type]
        **coder.access(), keepalive_interval=5.0, **options
    )


async def _again_on_stall(step: Callable[[], Awaitable[T]]) -> T:
    """Run an idempotent step; once more if Coder's tailnet stalled the stream under it.

    adr/0029: a fresh connection can stall in Coder's own network stack; sandlot ends the call
    with ConnectionLostError at the keepalive bound and the next call reconnects. Only that
    error, only once: anything else (or a second stall) fails the test.
    """
    try:
        return await step()
    except ConnectionLostError as exc:
        if "keepalive" not in str(exc):
            raise
        return await step()


async def test_a_template_workspace_from_create_to_delete(
    template_coder: TemplateCoder, tmp_path: Path
) -> None:
    coder = template_coder
    name = "tpl-life"
    provider = _provider(
        coder, template=coder.template, preset="ci",
        parameters={"memory_gb": 3, "extra_packages": ""}, workspace_name=name, on_close="stop",
    )  # fmt: skip
    sandbox = await provider.create()
    try:
        # Readiness waited for the blocking start script: its last act is there at once.
        first = await sandbox.exec(["cat", f"{PROJECT}/.sandlot/prepared"])
        assert first.exit_code == 0 and first.stdout.strip(), first
        # The preset's env (ci_mode -> CI=true) and CPU limit (1), and the parameter's memory.
        seen = await sandbox.exec(CGROUP_LIMITS, check=True)
        ci, cpu_max, memory_max = seen.stdout.splitlines()
        assert ci == "CI=true", seen.stdout
        quota, period = cpu_max.split()
        assert int(quota) == int(period), f"CPU quota/period for 1 CPU: {cpu_max}"
        assert int(memory_max) == 3 << 30, memory_max
        # The container is the template's: its user, its home volume.
        who = await sandbox.exec("id -un; echo $HOME", check=True)
        assert who.stdout.split() == ["coder", "/home/coder"]

        # exec with stdin and streaming.
        lines: list[str] = []
        piped = await _again_on_stall(
            lambda: sandbox.exec(
                "sha256sum; echo done", stdin=b"x" * 100_000, on_stdout=lines.append, check=True
            )
        )
        assert piped.stdout.split()[0] == hashlib.sha256(b"x" * 100_000).hexdigest()
        assert any("done" in line for line in lines)

        # copy both ways, binary-safe, modes kept.
        blob = tmp_path / "blob.bin"
        blob.write_bytes(os.urandom(300_000))
        blob.chmod(0o750)
        inside = f"{sandbox.worktree}/in dir/blob.bin"
        await _again_on_stall(lambda: sandbox.copy_in(blob, inside))
        back = tmp_path / "back" / "blob.bin"
        await _again_on_stall(lambda: sandbox.copy_out(inside, back))
        assert back.read_bytes() == blob.read_bytes()
        assert back.stat().st_mode & 0o777 == 0o750

        # forward_port to a server inside the workspace.
        served = await sandbox.processes.start(
            "mkdir -p /tmp/www && echo hello-from-template > /tmp/www/index.html && "
            "exec python3 -m http.server 18765 --bind 127.0.0.1 --directory /tmp/www"
        )
        async with sandbox.forward_port(18765) as address:
            body = await anyio.to_thread.run_sync(_get_when_up, address.url)
        assert body.strip() == "hello-from-template"
        # The durable process is listed, signalled, waited for, removed.
        assert served.id in [p.id for p in await sandbox.processes.list()]
        await served.signal("TERM")
        info = await served.wait(timeout=60)
        assert info.state != "running"
        await served.remove()

        # The verify tools in all four languages, with the image's Debian toolchains: the
        # bundled examples (Go, Python: all pass) and the verify fixtures (Node, Rust: known
        # failures), each giving the counts the same project gives on the local backend.
        for project in VERIFY_PROJECTS:
            root = f"{sandbox.worktree}/{project.name}"
            await _again_on_stall(partial(sandbox.copy_in, project, root))
            report = await verify.run_tests(sandbox, root=root)
            assert report.passed > 0, (project.name, report)
            assert (report.passed, report.failed) == await _local_counts(project), project.name

        # A file on the home volume, for after the stop.
        await sandbox.exec("echo kept > /home/coder/keep.txt", check=True)
    finally:
        await sandbox.close()  # on_close="stop": the container goes, the volume stays

    assert not coder.containers(), coder.containers()
    volumes = coder.volumes()
    assert len(volumes) == 1, volumes

    # Attach by name: the stopped workspace is started again (autostart), the file is there.
    again = await _provider(coder, workspace=name, on_close="delete").create()
    try:
        kept = await again.exec(["cat", "/home/coder/keep.txt"], check=True)
        assert kept.stdout == "kept\n"
    finally:
        await again.close()  # on_close="delete": Terraform destroys container and volume
    assert not coder.containers()
    assert not coder.volumes()
    assert name not in [ws["name"] for ws in coder.list_workspaces()]


async def test_a_failed_build_reports_the_provisioner_log(template_coder: TemplateCoder) -> None:
    """cpu_cores=8 on an engine with fewer CPUs: Docker refuses the container, Terraform fails
    the apply, and sandlot raises CoderBuildFailedError with the provisioner's words."""
    cpus = len(os.sched_getaffinity(0))
    assert cpus < 8, f"this check needs a host with fewer than 8 CPUs (has {cpus})"
    coder = template_coder
    provider = _provider(
        coder, template=coder.template, preset="none", workspace_name="tpl-fail", on_close="delete",
        parameters={"cpu_cores": 8, "memory_gb": 4, "extra_packages": "", "ci_mode": False},
    )  # fmt: skip
    with pytest.raises(CoderBuildFailedError) as caught:
        await provider.create()
    # Docker's refusal, as Terraform logged it, is in the build log's tail (and the message).
    assert "CPUs" in caught.value.build_log, caught.value
    assert "CPUs" in str(caught.value)
    # on_close="delete" applied on the failure: no container, no volume, no workspace.
    assert not coder.containers()
    assert not coder.volumes()
    assert "tpl-fail" not in [ws["name"] for ws in coder.list_workspaces()]


def _get_when_up(url: str) -> str:
    """GET `url`, retrying while the server inside starts (bounded: 60 s)."""
    import time

    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return str(resp.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
