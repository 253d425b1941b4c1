"""The session helper (adr/0042) on every backend: one start serves many file tool calls, it
ends with its sandbox, and its faults -- killed, stopped, its cached file replaced, its stdout
written to by a hostile process -- cost at most one failed call and never a hang, with the
one-command path taking over when it cannot serve."""

from __future__ import annotations

import logging
import os
import shlex
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import anyio
import pytest

from sandlot import Sandbox
from sandlot._engine import _MarkedCommand, engine_of
from sandlot._session import bundle, client
from sandlot._session.client import Session, session_for
from sandlot.errors import ToolError
from sandlot.tools import Toolbox
from sandlot.workspaces import WorkspaceSet
from tests.helpers import require

pytestmark = pytest.mark.anyio

#: What a test may take where the bug was a hang (generous: the machine is shared).
NO_HANG = 60.0

SLOW_PYTHON = """mkdir -p slowpy && cat > slowpy/python3 <<'END'
#!/bin/sh
echo start >> {starts}
sleep 0.3
exec {real} "$@"
END
chmod +x slowpy/python3"""

CACHE_DIRS = ('"${XDG_CACHE_HOME:-$HOME/.cache}/sandlot/helper" '
              '"${TMPDIR:-/tmp}/sandlot-helper-$(id -u)"')


@pytest.fixture
async def ws(sandbox: Sandbox, workdir: str) -> WorkspaceSet:
    script = (
        "mkdir -p tree && for i in $(seq 1 40); do "
        "printf 'line one\\nneedle %s\\nline three\\n' $i > tree/f$i.txt; done; "
        "seq 1 200 | sed 's/^/row /' > small.txt"
    )
    await sandbox.exec(["sh", "-c", script], cwd=workdir, check=True)
    return WorkspaceSet({"w": workdir})


def session_of(box: Toolbox) -> Session:
    return session_for(engine_of(box.sandbox), box.env)


@pytest.fixture
async def box(sandbox: Sandbox, ws: WorkspaceSet) -> AsyncIterator[Toolbox]:
    """A toolbox with a session of its own (a per-test variable in its environment), the
    helper on whatever SANDLOT_TEST_SESSION_HELPER says."""
    was, sandbox._session_helper = sandbox._session_helper, True
    made = Toolbox(sandbox, ws, env={"SANDLOT_T": os.urandom(4).hex()})
    try:
        yield made
    finally:
        sandbox._session_helper = was
        await session_of(made).aclose()


async def helper_pids(sandbox: Sandbox, backend: ModuleType, session: Session) -> list[int]:
    """The helper's processes, found by its run mark: in the sandbox where one command sees
    another's processes, else (local: this host's /proc sees them all) on this host."""
    running = session._running
    assert isinstance(running, _MarkedCommand)
    entry = f"SANDLOT_RUN={running.mark}"
    if not backend.NAME.startswith("local"):
        found = await sandbox.exec(["sh", "-c", (
            'for e in /proc/[0-9]*/environ; do tr "\\0" "\\n" < "$e" 2>/dev/null '
            f'| grep -qx {shlex.quote(entry)} && p=${{e#/proc/}} && echo ${{p%/environ}}; '
            "done; true")])
        return [int(p) for p in found.stdout.split()]
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if entry.encode() in (proc / "environ").read_bytes().split(b"\0"):
                    pids.append(int(proc.name))
            except OSError:
                pass
    return pids


async def python_pid(sandbox: Sandbox, backend: ModuleType, session: Session) -> int:
    """The helper's own pid as the sandbox's commands see it (bubblewrap: as this host does;
    its commands each have a PID namespace and cannot see it)."""
    if backend.SHARED_PIDS:
        return int(session.hello["pid"])
    for pid in await helper_pids(sandbox, backend, session):
        argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
        if argv0.endswith(b"python3"):
            return pid
    raise AssertionError("no helper process found")


async def signal_helper(sandbox: Sandbox, backend: ModuleType, session: Session,
                        sig: signal.Signals) -> None:
    """Signal the helper as an agent's own command would (bubblewrap: from this host)."""
    pid = await python_pid(sandbox, backend, session)
    if backend.SHARED_PIDS:
        await sandbox.exec(["kill", f"-{sig.name[3:]}", str(pid)], check=True)
    else:
        os.kill(pid, sig)


async def test_a_hundred_calls_cost_one_python3_start(sandbox: Sandbox, ws: WorkspaceSet,
                                                      workdir: str) -> None:
    real = (await sandbox.exec(["sh", "-c", "command -v python3"], check=True)).stdout.strip()
    starts = f"{workdir}/starts"
    await sandbox.exec(["sh", "-c", SLOW_PYTHON.format(starts=shlex.quote(starts),
                                                       real=shlex.quote(real))],
                       cwd=workdir, check=True)
    path = (await sandbox.exec(["sh", "-c", "echo $PATH"])).stdout.strip()
    env = {"PATH": f"{workdir}/slowpy:{path}", "SANDLOT_T": os.urandom(4).hex()}

    async def count() -> int:
        got = await sandbox.exec(["sh", "-c", f"cat {shlex.quote(starts)} 2>/dev/null | wc -l"])
        return int(got.stdout)

    was, sandbox._session_helper = sandbox._session_helper, False
    try:  # the counter counts: without the helper, each call starts python3
        off = Toolbox(sandbox, ws, env=env)
        for _ in range(3):
            await off.read("small.txt")
        assert await count() == 3
        sandbox._session_helper = True
        on = Toolbox(sandbox, ws, env=env)
        with anyio.fail_after(NO_HANG * 2):
            for i in range(25):
                assert "row 1" in (await on.read("small.txt", limit=5)).text
                assert len((await on.grep("needle", path="tree")).files) == 40
                assert len((await on.glob("tree/*.txt")).paths) == 40
                await on.edit("small.txt", f"row {i + 1}\n", f"row {i + 1} seen\n")
        assert await count() == 3 + 1
    finally:
        sandbox._session_helper = was
        await session_for(engine_of(sandbox), env).aclose()


COUNTED_RG = """mkdir -p countrg && cat > countrg/rg <<'END'
#!/bin/sh
echo start >> {starts}
exec {real} "$@"
END
chmod +x countrg/rg"""


async def test_grep_in_the_helper_starts_no_rg(sandbox: Sandbox, ws: WorkspaceSet,
                                               workdir: str) -> None:
    """grep in a small tree is served inside the helper (adr/0042): no rg start per call,
    where it cost more than the call's round trip; the knob SANDLOT_GREP_PROCESS=1 (tests)
    takes rg's route, and both give the same result."""
    real = (await sandbox.exec(["sh", "-c", "command -v rg"])).stdout.strip()
    require(bool(real), "ripgrep not installed in the sandbox (scripts/setup.d/40-toolbox.sh)")
    starts = f"{workdir}/rg-starts"
    await sandbox.exec(["sh", "-c", COUNTED_RG.format(starts=shlex.quote(starts),
                                                      real=shlex.quote(real))],
                       cwd=workdir, check=True)
    path = (await sandbox.exec(["sh", "-c", "echo $PATH"])).stdout.strip()
    env = {"PATH": f"{workdir}/countrg:{path}", "SANDLOT_T": os.urandom(4).hex()}

    async def count() -> int:
        got = await sandbox.exec(["sh", "-c", f"cat {shlex.quote(starts)} 2>/dev/null | wc -l"])
        return int(got.stdout)

    was, sandbox._session_helper = sandbox._session_helper, True
    try:
        results = []
        for knob in ({}, {"SANDLOT_GREP_PROCESS": "1"}):
            box = Toolbox(sandbox, ws, env={**env, **knob})
            before = await count()
            with anyio.fail_after(NO_HANG):
                for i in range(10):
                    found = await box.grep(f"needle {i + 1}$|line t", path="tree", context=1)
                    assert (f"tree/f{i + 1}.txt", 2) in [(ln.path, ln.line) for ln in found.lines
                                                         if ln.match and "needle" in ln.text]
                results.append(found)
            runs = await count() - before
            # rg route: each new pattern checked by one rg start, then one run per call.
            assert runs == (0 if not knob else 10 * 2), knob
        assert results[0] == results[1]
    finally:
        sandbox._session_helper = was
        for knob in ({}, {"SANDLOT_GREP_PROCESS": "1"}):
            await session_for(engine_of(sandbox), {**env, **knob}).aclose()


async def test_the_helper_ends_with_its_sandbox(sandbox: Sandbox, backend: ModuleType,
                                                ws: WorkspaceSet) -> None:
    """A second sandbox object on the same sandbox (attach, on_close=leave): its helper runs
    while it is open and is gone once it is closed, though the sandbox itself stays."""
    async with backend.attach(sandbox).session() as second:
        second._session_helper = True
        tools = Toolbox(second, ws)
        await tools.read("small.txt")
        session = session_of(tools)
        assert len(await helper_pids(sandbox, backend, session)) >= 1
    # close() ended it (the sweep by the sandbox's mark), not some later cleanup.
    assert await helper_pids(sandbox, backend, session) == []


async def test_no_python3_means_the_one_command_path(sandbox: Sandbox, ws: WorkspaceSet,
                                                     workdir: str) -> None:
    # sh and the tools the sh scripts use, but no python3.
    await sandbox.exec(["sh", "-c", "mkdir -p nopy && for t in sh cat head tail wc tr find "
                        "grep sort awk xargs md5sum readlink mkdir mv rm ls sed dirname "
                        "basename printf; do p=$(command -v $t) && ln -sf $p nopy/$t; done"],
                       cwd=workdir, check=True)
    tools = Toolbox(sandbox, ws, env={"PATH": f"{workdir}/nopy"})
    was, sandbox._session_helper = sandbox._session_helper, True
    try:
        assert "row 1" in (await tools.read("small.txt")).text
        assert await tools.containment() == "path"
        assert session_of(tools).disabled is not None
    finally:
        sandbox._session_helper = was


async def test_a_helper_killed_mid_call_costs_that_call_then_restarts_once(
    sandbox: Sandbox, backend: ModuleType, box: Toolbox, ws: WorkspaceSet,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await box.read("small.txt")
    session = session_of(box)
    first = session._running
    where = ws["w"]
    stalled_started = anyio.Event()

    async def stalled() -> AsyncIterator[bytes]:
        yield b"partial"
        stalled_started.set()
        await anyio.sleep(NO_HANG)
        yield b"never"

    async def kill_when_stalled() -> None:
        await stalled_started.wait()
        await anyio.sleep(0.3)  # the request is in the helper, its input open
        await signal_helper(sandbox, backend, session, signal.SIGKILL)

    with anyio.fail_after(NO_HANG):
        async with anyio.create_task_group() as group:
            group.start_soon(kill_when_stalled)
            with pytest.raises(ToolError, match="session helper was lost"):
                await box._write_bytes("write", where, where.contain("new.txt"), "new", "",
                                       stalled())
        # Nothing was written, no temp file left.
        left = await sandbox.exec(["ls", "-A"], cwd=where.root)
        assert "new.txt" not in left.stdout and "sandlot-write" not in left.stdout
        # The next call restarts it (a second start) ...
        assert "row 1" in (await box.read("small.txt")).text
        assert session.starts == 2 and session._running is not first
        # ... and after a second loss the session stays off: the one-command path serves.
        await signal_helper(sandbox, backend, session, signal.SIGKILL)
        with caplog.at_level(logging.WARNING, logger="sandlot"):
            for _ in range(3):
                assert "row 1" in (await box.read("small.txt")).text
        assert session.disabled is not None and session.starts == 2
        assert "session helper is off" in caplog.text


async def test_a_stopped_helper_costs_one_slow_call_not_a_hang(
    sandbox: Sandbox, backend: ModuleType, box: Toolbox, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client, "WEDGE_SECONDS", 2.0)
    await box.read("small.txt")
    session = session_of(box)
    await signal_helper(sandbox, backend, session, signal.SIGSTOP)
    with anyio.fail_after(NO_HANG):
        # Wedged: ended after WEDGE_SECONDS of silence; this call falls back, the next restarts.
        assert "row 1" in (await box.read("small.txt")).text
        assert "row 1" in (await box.read("small.txt")).text
    assert session.starts == 2


async def test_a_replaced_cached_helper_is_never_run(
    sandbox: Sandbox, box: Toolbox, workdir: str,
) -> None:
    await box.read("small.txt")  # the bundle is now cached in the sandbox
    name = f"session-{bundle.digest()}.py"
    marker = f"{workdir}/hostile-ran"
    hostile = f"open({marker!r}, 'w').write('ran')\n"
    found = await sandbox.exec(["sh", "-c", (
        f"for d in {CACHE_DIRS}; do if [ -f \"$d/{name}\" ]; then "
        f"printf %s {shlex.quote(hostile)} > \"$d/{name}\"; echo \"$d/{name}\"; fi; done")],
        check=True)
    cached = found.stdout.split()
    assert cached
    # A new session (another environment) starts from the cache: the hash does not match,
    # the bundle is sent again and the cache repaired; the hostile file never ran.
    other = Toolbox(sandbox, box.workspaces, env={"SANDLOT_T": os.urandom(4).hex()})
    try:
        assert "row 1" in (await other.read("small.txt")).text
        assert session_of(other).starts == 1 and session_of(other).disabled is None
        ran = await sandbox.exec(["test", "-e", marker])
        assert ran.exit_code != 0
        digest = await sandbox.exec(["sha256sum", cached[0]], check=True)
        assert digest.stdout.split()[0] == bundle.digest()
    finally:
        await session_of(other).aclose()


@pytest.mark.parametrize("garbage", [
    "printf 'not a frame at all, just text from a hostile process'",
    # A header announcing 2 GiB (over the frame bound), then bytes that never come.
    "printf '\\177\\377\\377\\377\\000\\000\\000\\001D'",
    # A well-formed DATA frame for a request id never issued.
    "printf '\\000\\000\\000\\002\\000\\001\\000\\000D\\001x'",
], ids=["text", "oversized", "forged"])
async def test_a_hostile_writer_on_the_helpers_stdout_ends_it_not_the_host(
    sandbox: Sandbox, backend: ModuleType, box: Toolbox, garbage: str,
) -> None:
    await box.read("small.txt")
    session = session_of(box)
    pid = await python_pid(sandbox, backend, session)
    if backend.SHARED_PIDS:
        await sandbox.exec(["sh", "-c", f"{garbage} > /proc/{pid}/fd/1"], check=True)
    else:  # bubblewrap: no command of the sandbox sees the helper; write from this host
        data = (await anyio.run_process(["sh", "-c", garbage])).stdout
        await anyio.Path(f"/proc/{pid}/fd/1").write_bytes(data)
    with anyio.fail_after(NO_HANG):
        # The helper's stream is not trusted any more: it is ended, the calls still answer.
        for _ in range(3):
            assert "row 1" in (await box.read("small.txt")).text
    assert session.starts == 2 or session.disabled is not None
