"""The scenarios every backend runs, in this order, on one sandbox per backend.

Each is an `async def (ctx) -> None` that raises `CheckFailed` when sandlot breaks a promise,
`ScenarioSkipped` when the sandbox lacks what the scenario needs, and fills `ctx.details`.
They check behaviour the way a user would see it, through sandlot's public API only.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import shlex
import stat
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio

from sandlot import Sandbox

from .context import CheckFailed, Context, ScenarioSkipped, expect

Scenario = Callable[[Context], Awaitable[None]]

#: How long a scenario waits for a streamed line before calling output "not streamed".
STREAM_WAIT = 30.0
#: The `timeout=` the timeout scenario gives its command.
SHORT_TIMEOUT = 3.0
#: How long after a timeout the processes may take to disappear.
REAP_WAIT = 15.0
#: Per verify tool / code run: generous, a cold Go or mypy cache on a small machine is slow.
TOOL_TIMEOUT = 600.0

#: Snippets per runtime mode; each prints 42 (sandlot.modes.MODES names the modes).
SNIPPETS: dict[str, str] = {
    "python": "import sys\nprint(6 * 7)\nprint('from python', file=sys.stderr)\n",
    "golang": 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println(6 * 7) }\n',
    "node": "console.log(6 * 7);\n",
    "shell": "echo $((6 * 7))\n",
}


def q(text: str) -> str:
    return shlex.quote(text)


async def exec_streaming(ctx: Context) -> None:
    """Callbacks arrive while the command runs: the command blocks until we saw its first line.

    The command prints `ready`, then waits for a gate file that only this process creates, from
    a SECOND exec, after the `ready` callback fired. So it can only finish if streaming works.
    """
    sb = ctx.box
    gate = f"{sb.worktree}/.dogfood-gate-{secrets.token_hex(4)}"
    seen_ready = anyio.Event()
    out: list[str] = []
    err: list[str] = []

    def on_stdout(line: str) -> None:
        out.append(line)
        if line == "ready":
            seen_ready.set()

    script = (
        "echo ready; echo 'to stderr' >&2; i=0; "
        f"while [ ! -e {q(gate)} ]; do i=$((i+1)); "
        "if [ $i -gt 1200 ]; then echo 'gate never opened' >&2; exit 3; fi; "
        # A sleep without fractions fails at once; fall back to whole seconds.
        "sleep 0.05 2>/dev/null || sleep 1; done; "
        "n=1; while [ $n -le 100 ]; do echo line-$n; n=$((n+1)); done"
    )
    proc = await sb.start(script, on_stdout=on_stdout, on_stderr=err.append, timeout=120)
    try:
        with anyio.fail_after(STREAM_WAIT):
            await seen_ready.wait()
    except TimeoutError:
        await proc.kill()
        raise CheckFailed(
            f"no stdout callback within {STREAM_WAIT:.0f}s although the command printed "
            "`ready` first and is still waiting: output is not streamed"
        ) from None
    expect(not proc.done, "the command ended before the gate opened")
    ctx.step("first line arrived while the command was running")
    await sb.exec(["touch", gate], check=True, timeout=60)
    result = await proc.wait()
    await sb.exec(["rm", "-f", gate], timeout=60)
    expect(result.ok, f"command failed: exit {result.exit_code}, stderr {result.stderr!r}")
    want = ["ready", *(f"line-{n}" for n in range(1, 101))]
    expect(out == want, f"stdout lines differ: got {len(out)} lines, first {out[:3]}")
    expect(err == ["to stderr"], f"stderr callbacks: {err!r}")
    expect(result.stdout.splitlines() == want, "captured stdout differs from the callbacks")
    ctx.details.update(stdout_lines=len(out), stderr_lines=len(err), callbacks_before_exit=1)
    ctx.summary(f"{len(out)} stdout + {len(err)} stderr lines, first before exit")


async def stdin_eof(ctx: Context) -> None:
    """`stdin=` is written then closed: `sha256sum` sees all bytes and EOF."""
    sb = ctx.box
    payload = os.urandom(1 << 20) + "\nlast line, no newline: ünïcödé".encode()
    digest = hashlib.sha256(payload).hexdigest()
    result = await sb.exec("sha256sum", stdin=payload, timeout=120)
    if result.exit_code == 127:
        raise ScenarioSkipped("sha256sum is not installed in the sandbox")
    expect(not result.timed_out, "sha256sum never saw EOF on stdin (timed out)")
    expect(result.ok, f"sha256sum failed: exit {result.exit_code}: {result.stderr!r}")
    got = result.stdout.split()[0] if result.stdout.split() else ""
    expect(got == digest, f"sha256 of stdin in the sandbox {got!r} != host {digest!r}")
    text = await sb.exec("cat; echo '<eof>'", stdin="héllo\nworld", timeout=60, check=True)
    expect(text.stdout == "héllo\nworld<eof>\n", f"text stdin came back as {text.stdout!r}")
    ctx.details.update(bytes=len(payload), sha256=digest)
    ctx.summary(f"{len(payload)} bytes, sha256 {digest[:12]} matches, EOF seen")


def _host_tree(root: Path) -> dict[str, str]:
    """{relative path: sha256} of every file under `root`."""
    sums = {}
    for path in sorted(root.rglob("*")):
        if path.is_file():
            sums[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return sums


def _make_tree(root: Path) -> None:
    (root / "nested" / "dir with space").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "blob.bin").write_bytes(os.urandom(3 << 20))
    (root / "nested" / "dir with space" / "ünïcödé 'quoted'.txt").write_text("hello\n")
    (root / "-leading-dash.txt").write_text("dash\n")
    (root / "empty").write_bytes(b"")
    script = root / "bin" / "run.sh"
    script.write_text("#!/bin/sh\necho run\n")
    script.chmod(0o755)


async def _sandbox_sums(sb: Sandbox, where: str) -> dict[str, str]:
    listing = await sb.exec(
        "find . -type f | sort | while IFS= read -r f; do sha256sum \"$f\"; done",
        cwd=where, timeout=120, check=True,
    )  # fmt: skip
    sums = {}
    for line in listing.stdout.splitlines():
        digest, _, name = line.partition("  ")
        sums[name.removeprefix("./")] = digest
    return sums


async def copy_checksum(ctx: Context) -> None:
    """copy_in and copy_out of a tree and of one file, compared by sha256 on both sides."""
    sb = ctx.box
    source = ctx.scratch / "tree"
    _make_tree(source)
    host = _host_tree(source)
    dest = f"{sb.worktree}/dogfood-copy"
    await sb.copy_in(source, dest)
    inside = await _sandbox_sums(sb, dest)
    expect(inside == host, f"checksums in the sandbox differ: {_diff(host, inside)}")
    mode = await sb.exec(["test", "-x", f"{dest}/bin/run.sh"], timeout=60)
    expect(mode.exit_code == 0, "bin/run.sh lost its executable bit in copy_in")
    back = ctx.scratch / "back"
    await sb.copy_out(dest, back)
    returned = _host_tree(back)
    expect(returned == host, f"checksums after copy_out differ: {_diff(host, returned)}")
    expect(
        bool((back / "bin" / "run.sh").stat().st_mode & stat.S_IXUSR),
        "bin/run.sh lost its executable bit in copy_out",
    )
    single = f"{sb.worktree}/dogfood-single/renamed.bin"
    await sb.copy_in(source / "blob.bin", single)
    out_file = ctx.scratch / "single" / "back.bin"
    await sb.copy_out(single, out_file)
    same = hashlib.sha256(out_file.read_bytes()).hexdigest() == host["blob.bin"]
    expect(same, "the single file copied in and out has another sha256")
    await sb.exec(["rm", "-rf", dest, f"{sb.worktree}/dogfood-single"], timeout=60)
    size = sum(p.stat().st_size for p in source.rglob("*") if p.is_file())
    ctx.details.update(files=len(host), bytes=size, sha256={"blob.bin": host["blob.bin"]})
    ctx.summary(f"{len(host)} files, {size} bytes in and out, sha256 equal, modes kept")


def _diff(want: dict[str, str], got: dict[str, str]) -> str:
    missing = sorted(set(want) - set(got))
    extra = sorted(set(got) - set(want))
    changed = sorted(k for k in set(want) & set(got) if want[k] != got[k])
    return f"missing {missing}, unexpected {extra}, different {changed}"


_MARKERS = ("go.mod", "Cargo.toml", "package.json", "pyproject.toml", "setup.py")


def example_projects(repo_root: Path) -> list[Path]:
    """The bundled example projects: directories of examples/ with a project marker file."""
    base = repo_root / "examples"
    if not base.is_dir():
        return []
    return [
        d for d in sorted(base.iterdir())
        if d.is_dir() and any((d / m).exists() for m in _MARKERS)
    ]  # fmt: skip


async def verify_tools(ctx: Context) -> None:
    """run_tests, run_lint and run_typecheck on every bundled example project: all clean."""
    try:
        from sandlot import verify
        from sandlot.errors import VerifyToolMissingError as missing_tool
    except ImportError as exc:
        raise ScenarioSkipped(f"sandlot.verify is not in this sandlot build ({exc})") from None
    sb = ctx.box
    projects = example_projects(ctx.repo_root)
    if not projects:
        raise ScenarioSkipped(f"no example project under {ctx.repo_root / 'examples'}")
    ran: dict[str, dict[str, object]] = {}
    absent: list[str] = []
    for project in projects:
        root = f"{sb.worktree}/examples/{project.name}"
        await sb.copy_in(project, root)
        done: dict[str, object] = {}
        tests = None
        try:
            tests = await verify.run_tests(sb, root=root, timeout=TOOL_TIMEOUT)
        except missing_tool as exc:
            ctx.missing(f"{project.name} run_tests: {exc}")
            absent.append(exc.binary)
        if tests is not None:
            expect(
                tests.ok and tests.passed > 0,
                f"{project.name}: run_tests ({tests.runner}) passed={tests.passed} "
                f"failed={tests.failed} exit={tests.exit_code}: {tests.failures[:3]}",
            )
            done["tests"] = {"runner": tests.runner, "passed": tests.passed,
                             "duration": round(tests.duration, 3)}  # fmt: skip
            ctx.step(f"{project.name}: {tests.passed} tests passed ({tests.runner})")
        for kind, tool in (("lint", verify.run_lint), ("typecheck", verify.run_typecheck)):
            try:
                report = await tool(sb, root=root, timeout=TOOL_TIMEOUT)
            except missing_tool as exc:
                ctx.missing(f"{project.name} run_{kind}: {exc}")
                absent.append(exc.binary)
                continue
            expect(
                report.ok,
                f"{project.name}: run_{kind} ({report.tool}) found {report.findings[:3]}",
            )
            done[kind] = {"tool": report.tool, "findings": len(report.findings),
                          "duration": round(report.duration, 3)}  # fmt: skip
            ctx.step(f"{project.name}: {kind} clean ({report.tool})")
        if done:
            ran[project.name] = done
    if not ran:
        raise ScenarioSkipped(
            "no verify tool is installed in the sandbox (missing: "
            f"{', '.join(dict.fromkeys(absent))})"
        )
    ctx.details["projects"] = ran
    parts = [f"{name}: {', '.join(tools)}" for name, tools in ran.items()]
    ctx.summary("; ".join(parts) + (f" ({len(ctx.unavailable)} unavailable)"
                                   if ctx.unavailable else ""))  # fmt: skip


async def run_code_modes(ctx: Context) -> None:
    """run_code in every runtime mode whose runtime the sandbox has; each prints 42."""
    try:
        from sandlot import modes
        from sandlot.errors import RuntimeNotFoundError
    except ImportError as exc:
        raise ScenarioSkipped(f"sandlot.modes is not in this sandlot build ({exc})") from None
    sb = ctx.box
    ran: dict[str, dict[str, object]] = {}
    absent: list[str] = []
    for name in modes.MODES:
        snippet = SNIPPETS.get(name)
        if snippet is None:
            ctx.missing(f"mode {name}: dogfood has no snippet for it")
            continue
        try:
            health = await modes.health(sb, mode=name)
        except RuntimeNotFoundError as exc:
            ctx.missing(f"mode {name}: {exc}")
            absent.extend(exc.binaries)
            continue
        result = await modes.run_code(sb, snippet, mode=name, timeout=TOOL_TIMEOUT)
        expect(
            result.ok and result.stdout.strip() == "42",
            f"mode {name}: exit {result.exit_code}, stdout {result.stdout!r}, "
            f"stderr {result.stderr[-400:]!r}",
        )
        ran[name] = {"runtime": health.runtime_version, "duration": round(result.duration, 3)}
        ctx.step(f"mode {name} ok ({health.runtime_version})")
    if not ran:
        raise ScenarioSkipped(
            f"no runtime of any mode in the sandbox (missing: {', '.join(absent)})"
        )
    detected = await modes.health(sb)
    ctx.details.update(modes=ran, detected=detected.mode)
    ctx.summary(f"{', '.join(ran)} (detected: {detected.mode})")


_ALIVE = (
    'for p in $(cat {pids}); do '
    'if [ -r /proc/$p/stat ]; then s=$(sed "s/.*) //" /proc/$p/stat | cut -c1); '
    '[ "$s" = Z ] || echo $p; fi; done'
)


async def timeout_cleanup(ctx: Context) -> None:
    """A command tree that outlives its timeout is ended whole: no process is left behind."""
    sb = ctx.box
    pids = f"{sb.worktree}/.dogfood-pids-{secrets.token_hex(4)}"
    script = (
        f"echo $$ > {q(pids)}; sleep 300 & echo $! >> {q(pids)}; "
        f"(sleep 300; echo never) & echo $! >> {q(pids)}; echo started; wait"
    )
    result = await sb.exec(script, timeout=SHORT_TIMEOUT)
    expect(result.timed_out, f"the command was not timed out: {result}")
    expect("started" in result.stdout, "output before the timeout was not kept")
    listed = await sb.exec(["cat", pids], timeout=60, check=True)
    started = listed.stdout.split()
    expect(len(started) == 3, f"expected 3 pids, the command wrote {started}")
    alive: list[str] = started
    with anyio.move_on_after(REAP_WAIT):
        while alive:
            check = await sb.exec(_ALIVE.format(pids=q(pids)), timeout=60, check=True)
            alive = check.stdout.split()
            if alive:
                await anyio.sleep(0.2)
    await sb.exec(["rm", "-f", pids], timeout=60)
    expect(not alive, f"processes still alive {REAP_WAIT:.0f}s after the timeout: {alive}")
    ctx.details.update(processes=len(started), timeout=SHORT_TIMEOUT)
    ctx.summary(f"timed out after {result.duration:.1f}s; {len(started)} processes all gone")


#: name -> scenario, in the order they run (between `create` and `close`).
SCENARIOS: dict[str, Scenario] = {
    "exec-streaming": exec_streaming,
    "stdin": stdin_eof,
    "copy-checksum": copy_checksum,
    "verify": verify_tools,
    "run-code": run_code_modes,
    "timeout-cleanup": timeout_cleanup,
}
