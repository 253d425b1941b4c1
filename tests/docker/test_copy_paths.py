"""Both copy_in paths keep the copy contract: `docker cp -` (big payloads, root) and the shared
tar-over-exec path (small payloads, or a non-root sandbox user)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandlot import TransferError
from sandlot.backends.docker import copy as docker_copy

pytestmark = pytest.mark.anyio

Open = Callable[..., Any]
AWKWARD = ["with space", "it's", 'say "hi"', "ünï", "-rf", "$HOME", "a;b"]


@pytest.fixture
def always_docker_cp(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docker_copy, "CP_MIN_BYTES", 0)


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each copy_in that took the docker cp path."""
    used: list[str] = []
    real = docker_copy.copy_in

    async def recording(sandbox: Any, source: Path, dest: str) -> None:
        used.append(dest)
        await real(sandbox, source, dest)

    monkeypatch.setattr(docker_copy, "copy_in", recording)
    return used


def _digest(root: Path) -> dict[str, tuple[str, int]]:
    out = {}
    for path in sorted(root.rglob("*")):
        data = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        out[path.relative_to(root).as_posix()] = (data, path.stat().st_mode & 0o777)
    return out


async def test_docker_cp_path_keeps_the_contract(
    opened: Open, tmp_path: Path, always_docker_cp: None, spy: list[str]
) -> None:
    sandbox = await opened()
    src = tmp_path / "src"
    for name in AWKWARD:
        (src / name).mkdir(parents=True)
        (src / name / name).write_bytes(os.urandom(999))
    (src / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (src / "run.sh").chmod(0o750)
    dest = f"{sandbox.worktree}/odd ' dir"
    await sandbox.copy_in(src, dest)
    assert (await sandbox.exec("./run.sh", cwd=dest)).stdout == "ran\n"
    back = tmp_path / "back"
    await sandbox.copy_out(dest, back)
    assert _digest(back) == _digest(src)
    # A file to an exact path (leading dash, new parents), then overwritten in place.
    one = src / "-rf" / "-rf"
    await sandbox.copy_in(one, f"{dest}/new/parents/-x file")
    assert (await sandbox.exec(["sha256sum", f"{dest}/new/parents/-x file"])).stdout.startswith(
        hashlib.sha256(one.read_bytes()).hexdigest()
    )
    # Merging into an existing directory keeps what was there.
    (tmp_path / "more").mkdir()
    (tmp_path / "more" / "extra").write_text("extra")
    await sandbox.copy_in(tmp_path / "more", dest)
    assert (await sandbox.exec("cat extra run.sh | head -1", cwd=dest)).stdout == "extra#!/bin/sh\n"
    # Wrong kinds of destination: typed, and no staging directory left behind.
    with pytest.raises(TransferError, match="destination is a directory"):
        await sandbox.copy_in(one, dest)
    with pytest.raises(TransferError, match="exists and is not a directory"):
        await sandbox.copy_in(src, f"{dest}/run.sh")
    assert ".sandlot-stage" not in (await sandbox.exec("ls -A", cwd=sandbox.worktree)).stdout
    assert len(spy) == 5  # every copy_in above took the docker cp path


async def test_small_payloads_and_non_root_users_take_the_exec_path(
    opened: Open, tmp_path: Path, spy: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    small = tmp_path / "small.txt"
    small.write_text("small")
    root_box = await opened()
    await root_box.copy_in(small, f"{root_box.worktree}/s")
    many = tmp_path / "many"
    many.mkdir()
    for i in range(1500):  # many entries, few bytes: the exec stream is as fast (adr/0028)
        (many / f"f{i}").write_text(str(i))
    await root_box.copy_in(many, f"{root_box.worktree}/many")
    assert spy == []
    listed = await root_box.exec("ls | wc -l", cwd=f"{root_box.worktree}/many")
    assert listed.stdout.strip() == "1500"
    monkeypatch.setattr(docker_copy, "CP_MIN_BYTES", 0)
    user_box = await opened(user="sandbox")
    await user_box.copy_in(small, f"{user_box.worktree}/s")
    assert spy == []  # docker cp would leave root-owned files the user could not change
    owner = await user_box.exec(["stat", "-c", "%U", f"{user_box.worktree}/s"])
    assert owner.stdout == "sandbox\n"
    await root_box.copy_in(small, f"{root_box.worktree}/big-enough-now")
    assert spy == [f"{root_box.worktree}/big-enough-now"]
