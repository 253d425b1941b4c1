"""Property: any name a POSIX file system can hold (every byte but "/" and NUL) survives
copy_in, copy_out, glob and grep exactly, with both search engines and in a read-only toolbox;
names without control characters also survive write and read. Every backend."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandlot import Sandbox
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet

pytestmark = pytest.mark.anyio

_BYTES = st.binary(min_size=1, max_size=12).filter(
    lambda b: b"/" not in b and b"\0" not in b and b not in (b".", b"..")
)
# Bias towards the troublesome bytes: newline, backslash, a leading dash, invalid UTF-8.
_NAMES = st.one_of(
    _BYTES,
    st.sampled_from([b"-", b"-rf", b"a\nb", b"\n..", b"back\\slash", b"\\t", b"caf\xe9",
                     b"\xff\xfe", b" lead", b"trail ", b"*?[", b"$(x)", b"'\""]),
)


def _shown(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(names=st.lists(_NAMES, min_size=1, max_size=5, unique=True))
async def test_any_name_round_trips(
    sandbox: Sandbox, workdir: str, tmp_path: Path, names: list[bytes]
) -> None:
    case = uuid.uuid4().hex[:8]
    src = tmp_path / f"src-{case}"
    os.makedirs(src)
    for index, raw in enumerate(names):
        folder = os.path.join(os.fsencode(src), raw)
        os.makedirs(folder, exist_ok=True)
        Path(os.fsdecode(os.path.join(folder, raw))).write_bytes(b"needle %d\n" % index)
    root = f"{workdir}/names-{case}"
    await sandbox.copy_in(src, root)
    back = tmp_path / f"back-{case}"
    await sandbox.copy_out(root, back)
    for index, raw in enumerate(names):
        copied = Path(os.fsdecode(os.path.join(os.fsencode(back), raw, raw)))
        assert copied.read_bytes() == b"needle %d\n" % index
    # rg in the session helper's own search, rg started per search (the test knob), grep.
    for use_ripgrep, knob in ((True, {}), (True, {"SANDLOT_GREP_PROCESS": "1"}), (False, {})):
        for readonly in (False, True):
            box = Toolbox(sandbox, WorkspaceSet.parse(f"w={root}"), use_ripgrep=use_ripgrep,
                          readonly=readonly, env=knob)
            listed = await box.glob("**/*")
            assert sorted(listed.paths) == sorted(f"{_shown(r)}/{_shown(r)}" for r in names)
            found = await box.grep("needle")
            assert sorted(ln.path for ln in found.lines) == sorted(listed.paths)
    box = Toolbox(sandbox, WorkspaceSet.parse(f"w={root}"))
    for raw in names:
        name = raw.decode("utf-8", "strict") if _plain(raw) else None
        if name is None:
            continue
        await box.write(f"{name}/written", "text\n")
        assert "text" in (await box.read(f"{name}/written")).text


def _plain(raw: bytes) -> bool:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return text.isprintable()
