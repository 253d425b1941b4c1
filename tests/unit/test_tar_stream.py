"""A host tar that fails spoils the end of its stream: every reader's tar then fails.

copy_in publishes what the sandbox's `tar -x` extracted when it exits 0, so after a host
failure the stream must end where no tar accepts it. This tries every cut point of a real
archive (GNU tar's output, with a long name, an empty file, a directory, a big member) with
the two tars sandboxes have: GNU tar and busybox tar.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from sandlot._tar_stream import BLOCK, HOLD, TarCursor, spoiled_end
from tests.helpers import require_binary


def _archive(tmp_path: Path) -> bytes:
    src = tmp_path / "src"
    (src / "dir" / ("long-" * 30)).mkdir(parents=True)
    (src / "dir" / ("long-" * 30) / "inner.txt").write_text("x" * 700)
    (src / "empty").write_bytes(b"")
    (src / "big.bin").write_bytes(bytes(range(256)) * 80)
    (src / "small").write_text("hi\n")
    return subprocess.run(["tar", "--numeric-owner", "-C", str(src), "-cf", "-", "."],
                          check=True, capture_output=True).stdout


@pytest.mark.parametrize("reader", ["tar", "busybox"])
def test_every_cut_point_fails_the_reader(tmp_path: Path, reader: str) -> None:
    argv = ["tar"] if reader == "tar" else [require_binary("busybox"), "tar"]
    data = _archive(tmp_path)
    # Cut points the stream can have sent before the host tar's exit is known: all but HOLD.
    cuts = sorted({*range(0, len(data) - HOLD + 1, BLOCK),
                   *range(37, len(data) - HOLD + 1, 331)})
    assert len(cuts) > 20
    accepted = []
    for cut in cuts:
        cursor = TarCursor()
        cursor.feed(data[:cut])
        stream = data[:cut] + spoiled_end(cursor, data[cut:])
        out = tmp_path / f"out-{cut}"
        out.mkdir()
        if subprocess.run([*argv, "-xf", "-", "-C", str(out)], input=stream,
                          capture_output=True).returncode == 0:
            accepted.append(cut)
    assert accepted == []


def test_the_whole_archive_is_still_accepted(tmp_path: Path) -> None:
    data = _archive(tmp_path)
    cursor = TarCursor()
    cursor.feed(data)
    assert cursor.skip == 0 and not cursor.in_header
    out = tmp_path / "out"
    out.mkdir()
    subprocess.run(["tar", "-xf", "-", "-C", str(out)], input=data, check=True)
    assert (out / "small").read_text() == "hi\n"
