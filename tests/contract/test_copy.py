"""The copy contract: exact destinations, binary safety, modes, awkward names."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from sandlot import (
    HostPathNotFoundError,
    InvalidPathError,
    Sandbox,
    SourceChangedError,
    TransferError,
)

pytestmark = pytest.mark.anyio

AWKWARD_NAMES = ["with space", "it's", 'say "hi"', "ünï cødé", "-rf", "--help", "$HOME", "a;b"]


def _tree(root: Path) -> dict[str, tuple[str, int]]:
    """Relative path -> (sha256 or 'dir', permission bits) for every entry under root."""
    out: dict[str, tuple[str, int]] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        mode = path.stat().st_mode & 0o777
        digest = "dir" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
        out[rel] = (digest, mode)
    return out


async def test_binary_round_trip_of_50_mib(sandbox: Sandbox, workdir: str, tmp_path: Path) -> None:
    data = os.urandom(50 << 20)
    source = tmp_path / "blob.bin"
    source.write_bytes(data)
    await sandbox.copy_in(source, f"{workdir}/in/blob.bin")
    result = await sandbox.exec(["sha256sum", f"{workdir}/in/blob.bin"], timeout=120)
    assert result.stdout.split()[0] == hashlib.sha256(data).hexdigest()
    back = tmp_path / "out" / "again.bin"
    await sandbox.copy_out(f"{workdir}/in/blob.bin", back)
    assert hashlib.sha256(back.read_bytes()).digest() == hashlib.sha256(data).digest()


async def test_directory_copy_puts_contents_at_the_destination(
    sandbox: Sandbox, workdir: str, tmp_path: Path
) -> None:
    src = tmp_path / "project"
    (src / "pkg" / "deep").mkdir(parents=True)
    (src / "empty").mkdir()
    (src / "README").write_text("readme\n")
    (src / "pkg" / "deep" / "mod.py").write_text("x = 1\n")
    tool = src / "run.sh"
    tool.write_text("#!/bin/sh\necho ran\n")
    tool.chmod(0o755)
    (src / "secret").write_text("s")
    (src / "secret").chmod(0o600)

    dest = f"{workdir}/copied"
    await sandbox.copy_in(src, dest)
    listing = await sandbox.exec("find . | sort", cwd=dest)
    assert listing.stdout.split("\n")[:-1] == [
        ".", "./README", "./empty", "./pkg", "./pkg/deep", "./pkg/deep/mod.py",
        "./run.sh", "./secret",
    ]  # fmt: skip
    assert (await sandbox.exec("./run.sh", cwd=dest)).stdout == "ran\n"
    modes = await sandbox.exec(["stat", "-c", "%a %n", "run.sh", "secret"], cwd=dest)
    assert modes.stdout == "755 run.sh\n600 secret\n"

    back = tmp_path / "back" / "here"
    await sandbox.copy_out(dest, back)
    assert _tree(back) == _tree(src)


async def test_directory_copy_into_an_existing_directory_merges(
    sandbox: Sandbox, workdir: str, tmp_path: Path
) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "new.txt").write_text("new")
    dest = f"{workdir}/existing"
    await sandbox.exec(f"mkdir -p '{dest}' && echo old > '{dest}/old.txt'", check=True)
    await sandbox.copy_in(tmp_path / "a", dest)
    assert (await sandbox.exec("cat old.txt new.txt", cwd=dest)).stdout == "old\nnew"


async def test_file_copy_writes_exactly_the_destination(
    sandbox: Sandbox, workdir: str, tmp_path: Path
) -> None:
    source = tmp_path / "original-name.txt"
    source.write_text("content\n")
    source.chmod(0o640)
    dest = f"{workdir}/some/new/parents/renamed.cfg"
    await sandbox.copy_in(source, dest)
    assert (await sandbox.exec(["cat", dest])).stdout == "content\n"
    assert (await sandbox.exec(["stat", "-c", "%a", dest])).stdout == "640\n"
    assert (await sandbox.exec(["ls", f"{workdir}/some/new/parents"])).stdout == "renamed.cfg\n"
    # Overwrite in place.
    source.write_text("second\n")
    await sandbox.copy_in(source, dest)
    assert (await sandbox.exec(["cat", dest])).stdout == "second\n"

    out = tmp_path / "x" / "y" / "other.name"
    await sandbox.copy_out(dest, out)
    assert out.read_text() == "second\n"
    assert sorted(p.name for p in out.parent.iterdir()) == ["other.name"]  # no staging left


async def test_awkward_names_survive_a_round_trip(
    sandbox: Sandbox, workdir: str, tmp_path: Path
) -> None:
    src = tmp_path / "src"
    for name in AWKWARD_NAMES:
        (src / name).mkdir(parents=True)
        (src / name / name).write_text(name)
    dest = f"{workdir}/odd dir ' \" ü -x"
    await sandbox.copy_in(src, dest)
    for name in AWKWARD_NAMES:
        result = await sandbox.exec(["cat", "--", f"{dest}/{name}/{name}"])
        assert result.stdout == name
    single = f"{dest}/-leading-dash file"
    await sandbox.copy_in(src / "-rf" / "-rf", single)
    back = tmp_path / "back ü"
    await sandbox.copy_out(dest, back)
    assert _tree(back / "-rf")["-rf"] == _tree(src / "-rf")["-rf"]
    assert (back / "-leading-dash file").read_text() == "-rf"
    for name in AWKWARD_NAMES:
        assert (back / name / name).read_text() == name
    one = tmp_path / "-one"
    await sandbox.copy_out(f"{dest}/it's/it's", one)
    assert one.read_text() == "it's"


async def test_copy_errors_are_typed_and_leave_nothing(
    sandbox: Sandbox, workdir: str, tmp_path: Path
) -> None:
    with pytest.raises(HostPathNotFoundError, match="does not exist"):
        await sandbox.copy_in(tmp_path / "missing", f"{workdir}/x")
    with pytest.raises(InvalidPathError, match="absolute"):
        await sandbox.copy_in(tmp_path, "relative/path")
    with pytest.raises(InvalidPathError, match="absolute"):
        await sandbox.copy_out("relative/path", tmp_path / "x")
    with pytest.raises(TransferError, match="no such file or directory in sandbox"):
        await sandbox.copy_out(f"{workdir}/not-there", tmp_path / "out" / "x")
    assert not (tmp_path / "out" / "x").exists()
    assert [p.name for p in (tmp_path / "out").iterdir()] == []  # no staging dir left
    (tmp_path / "f").write_text("f")
    await sandbox.exec(["mkdir", "-p", f"{workdir}/adir"], check=True)
    with pytest.raises(TransferError, match="destination is a directory"):
        await sandbox.copy_in(tmp_path / "f", f"{workdir}/adir")
    leftovers = await sandbox.exec("ls -A", cwd=workdir)
    assert ".sandlot-stage" not in leftovers.stdout


@pytest.mark.parametrize("name", ["a\\tb", "\\ba%", "back\\\\slash", "x\\n..", "tab\tand\nnl"])
async def test_copy_out_carries_backslashes_and_control_bytes_exactly(
    sandbox: Sandbox, workdir: str, tmp_path: Path, name: str
) -> None:
    # A look-alike with the byte the backslash sequence would unquote to sits beside it.
    look_alike = name.replace("\\t", "\t").replace("\\n", "\n")
    await sandbox.exec(["sh", "-c", 'printf real > "$1/$2"; printf other > "$1/$3"', "sh",
                        workdir, name, look_alike + "-other"], check=True)
    if look_alike != name:
        await sandbox.exec(["sh", "-c", 'printf decoy > "$1/$2"', "sh", workdir, look_alike],
                           check=True)
    out = tmp_path / "single"
    await sandbox.copy_out(f"{workdir}/{name}", out)
    assert out.read_bytes() == b"real"
    tree = tmp_path / "tree"
    await sandbox.copy_out(workdir, tree)
    assert (tree / name).read_bytes() == b"real"


async def test_file_copy_out_keeps_mode_time_and_links_and_replaces_whole(
    sandbox: Sandbox, workdir: str, tmp_path: Path
) -> None:
    script = f"{workdir}/tool.sh"
    await sandbox.exec(
        ["sh", "-c", 'printf "#!/bin/sh\\n" > "$1" && chmod 751 "$1" && touch -d @1000000000 "$1"'
         " && ln -s tool.sh \"$2\"", "sh", script, f"{workdir}/link"],
        check=True,
    )
    out = tmp_path / "out" / "tool"
    out.parent.mkdir()
    out.write_text("an older file, replaced whole\n")
    await sandbox.copy_out(script, out)
    assert out.read_bytes() == b"#!/bin/sh\n"
    assert out.stat().st_mode & 0o777 == 0o751
    assert int(out.stat().st_mtime) == 1000000000
    link = tmp_path / "out" / "link"
    await sandbox.copy_out(f"{workdir}/link", link)
    assert link.is_symlink() and os.readlink(link) == "tool.sh"
    with pytest.raises(TransferError, match="host destination is a directory"):
        await sandbox.copy_out(script, tmp_path / "out")
    assert sorted(p.name for p in out.parent.iterdir()) == ["link", "tool"]  # no staging left


@pytest.mark.parametrize("mib", [4, 24])
async def test_a_source_that_changes_while_copied_raises_and_publishes_nothing(
    sandbox: Sandbox, workdir: str, tmp_path: Path, mib: int
) -> None:
    """Issue 26.4: a file growing under copy_in made the host tar fail (exit 1, "file changed
    as we read it") inside a backend's stdin task: "Task exception was never retrieved" was
    logged and copy_in returned as if the copy were complete. Two sizes: Docker copies from
    16 MiB on through `docker cp` (backends/docker/copy.py), below through the shared stream."""
    where = f"{workdir}/{mib}"  # both sizes share a workdir (its name is cut before the id)
    await sandbox.exec(["mkdir", where], check=True)
    src = tmp_path / "logs"
    src.mkdir()
    for index in range(20):
        (src / f"part-{index:02}.txt").write_bytes(os.urandom(64 << 10))
    growing = src / "zz_growing.log"
    growing.write_bytes(os.urandom(mib << 20))
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, Any]] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    # Another process appends all along (a thread would wait for the GIL, and might miss
    # the moment tar reads the file).
    writer = await anyio.open_process(
        ["sh", "-c", 'while :; do echo another log line; done >> "$1"', "sh", str(growing)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with pytest.raises(SourceChangedError) as caught:
            await sandbox.copy_in(src, f"{where}/logs")
        gc.collect()  # a task whose exception nobody retrieved reports it when collected
        await asyncio.sleep(0.1)
    finally:
        writer.kill()
        await writer.wait()
        loop.set_exception_handler(previous)
    assert caught.value.path == str(growing.resolve())
    assert "zz_growing.log" in str(caught.value) and "nothing was copied" in str(caught.value)
    assert isinstance(caught.value, TransferError)
    assert unhandled == []
    listing = await sandbox.exec(["ls", "-A", where], check=True)
    assert listing.stdout == ""  # neither the destination nor a staging directory
    # The same tree, once nothing writes to it, copies completely.
    await sandbox.copy_in(src, f"{where}/logs")
    size = await sandbox.exec(["wc", "-c", f"{where}/logs/zz_growing.log"], check=True)
    assert int(size.stdout.split()[0]) == growing.stat().st_size
