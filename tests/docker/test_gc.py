"""`sandlot gc` on real left-behind containers: a program that dies without closing."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import sandlot
from sandlot import ConfigurationError
from sandlot.backends.docker import DockerProvider, handover
from sandlot.backends.docker.gc import parse_duration, parse_inspect
from tests import docker_engine

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def engine(engine: docker_engine.DockerEngine) -> Iterator[docker_engine.DockerEngine]:
    """gc acts on a whole engine: these tests get one of their own, so the other tests'
    sandboxes (the contract suite's shared one) are neither seen nor removed."""
    del engine  # the shared engine only proves the parts are there
    with docker_engine.DockerEngine() as own:
        yield own


@pytest.fixture
def make(engine: docker_engine.DockerEngine) -> Callable[..., DockerProvider]:
    def build(**options: Any) -> DockerProvider:
        return sandlot.docker(engine.busybox_image(), on_close="delete", docker_host=engine.host,
                              **options)

    return build

FIXTURES = Path(__file__).parent.parent / "fixtures" / "docker"

# A program that makes a sandbox and dies without closing it (as a crash or SIGKILL would).
_CRASH = """
import os, sys, anyio, sandlot
async def main():
    sandbox = await sandlot.docker(sys.argv[1], on_close=sys.argv[3], docker_host=sys.argv[2],
                                   name=sys.argv[4]).create()
    print(sandbox.name, flush=True)
    os._exit(0)
anyio.run(main)
"""


def crash_leaving(engine: docker_engine.DockerEngine, name: str, on_close: str = "delete") -> str:
    done = subprocess.run(
        [sys.executable, "-c", _CRASH, engine.busybox_image(), engine.host, on_close, name],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def gc(engine: docker_engine.DockerEngine, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "sandlot", "gc", "--docker-host", engine.host, "--json", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def actions(result: dict[str, object]) -> dict[str, str]:
    rows = result["containers"]
    assert isinstance(rows, list)
    return {row["name"]: row["action"] for row in rows}


async def test_gc_finds_and_removes_what_a_crash_left(
    engine: docker_engine.DockerEngine, make: Callable[..., DockerProvider]
) -> None:
    crashed = crash_leaving(engine, "sandlot-gc-crashed")
    kept = crash_leaving(engine, "sandlot-gc-kept", on_close="leave")
    live = await make(name="sandlot-gc-live").create()  # its owner (this test) still runs
    try:
        dry = gc(engine, "--dry-run")
        seen = actions(dry)
        assert seen[crashed] == "remove"
        assert seen[kept].startswith("keep: on_close=leave")
        assert seen[live.name].startswith("keep: its program is still running")
        assert dry["would_remove"] == [crashed]
        assert set(engine.sandlot_containers()) >= {crashed, kept, live.name}  # dry: untouched

        young = gc(engine, "--older-than", "1h")
        assert actions(young)[crashed] == "keep: younger than 1h"
        assert crashed in engine.sandlot_containers()

        session = engine.docker("container", "inspect", "--format",
                                '{{index .Config.Labels "sandlot.session"}}', crashed).stdout
        folder = handover.dir_of_session(session.strip())
        assert folder is not None and folder.is_dir()  # its forward handover directory

        done = gc(engine)
        assert done["removed"] == [crashed]
        assert crashed not in engine.sandlot_containers()
        assert not folder.exists()

        everything = gc(engine, "--all")
        assert everything["removed"] == [kept]
        assert engine.sandlot_containers() == [live.name]
        assert (await live.exec("echo alive")).stdout == "alive\n"
    finally:
        await live.close()
        engine.docker("rm", "-f", crashed, kept, check=False)


async def test_gc_force_removes_containers_in_use(
    engine: docker_engine.DockerEngine, make: Callable[..., DockerProvider]
) -> None:
    live = await make(name="sandlot-gc-forced").create()
    try:
        assert gc(engine, "--force", "--dry-run")["would_remove"] == [live.name]
        gc(engine, "--force")
        assert live.name not in engine.sandlot_containers()
    finally:
        await live.close()  # already gone: close still succeeds


def test_gc_text_output_and_engine_errors(engine: docker_engine.DockerEngine) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sandlot", "gc", "--docker-host", engine.host, "--dry-run"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    assert "sandlot gc: would remove 0 of" in done.stdout
    down = subprocess.run(
        [sys.executable, "-m", "sandlot", "gc", "--docker-host", "unix:///nonexistent.sock"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert down.returncode == 1
    assert "cannot reach the Docker engine at unix:///nonexistent.sock" in down.stderr


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("30s", 30), ("15m", 900), ("2h", 7200), ("7d", 604800), ("1w", 604800), ("1h30m", 5400)],
)
def test_parse_duration(text: str, seconds: int) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "10", "h", "1x", "-1h", "1h 30m", "1.5h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ConfigurationError, match="invalid duration"):
        parse_duration(text)


def test_parse_inspect_on_captured_output() -> None:
    # Recorded from the real engine by tests/docker/capture_fixtures.py.
    data = json.loads((FIXTURES / "inspect-sandlot.json").read_text())
    containers = parse_inspect(data)
    assert [c.name for c in containers] == ["sandlot-capture-delete", "sandlot-capture-stop"]
    first, second = containers
    assert (first.state, first.on_close) == ("running", "delete")
    assert (second.state, second.on_close) == ("exited", "stop")
    assert first.created is not None and first.owner.count("/") == 2
    # The unlabelled container in the capture is not sandlot's and is ignored.
    assert len(data) == 3


_CRASH_FORKING = """
import os, sys, anyio, sandlot
async def main():
    source = await sandlot.docker(sys.argv[1], on_close="delete", docker_host=sys.argv[2]).create()
    forks = await sandlot.fork(source, n=2).__aenter__()
    print(source.name, *(f.name for f in forks), flush=True)
    os._exit(0)
anyio.run(main)
"""


def test_gc_removes_a_crashed_forks_containers_and_image(
    engine: docker_engine.DockerEngine,
) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CRASH_FORKING, engine.busybox_image(), engine.host],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = done.stdout.split()
    images = engine.docker("images", "-q", "--filter", "label=sandlot.fork=true").stdout.split()
    assert len(names) == 3 and len(images) == 1
    result = gc(engine)
    assert set(result["removed"]) >= set(names)  # type: ignore[arg-type]
    assert len(result["fork_images"]) == 1  # type: ignore[arg-type]
    assert engine.docker("images", "-q", "--filter", "label=sandlot.fork=true").stdout == ""
