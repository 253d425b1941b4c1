"""Every fenced code block of README.md runs as its marker says (tests/docs/blocks.py has the
convention), so the README cannot rot: a block with no runner fails here, never skips.

Blocks that need Docker run on the tests' private engine (their ids say `docker`); the coder
ones on the fake deployment (sandlot.testing). Each block runs as its own process in a scratch
directory holding a copy of examples/, with this environment's `sandlot` first on PATH.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.docs import blocks as readme
from tests.docs.harness import SETUPS
from tests.helpers import require

REPO = readme.README.parent
BIN = Path(sys.executable).parent
ALL = readme.blocks()
RUN = [b for b in ALL if b.kind not in ("not-run", "text")]


def _id(block: readme.Block) -> str:
    backend = block.options.get("backend", "")
    return f"{block.id}-{backend}" if backend else block.id


def test_every_block_has_a_runner() -> None:
    problems = []
    for b in ALL:
        if b.lang not in readme.LANGUAGES:
            problems.append(f"{b.id}: language {b.lang!r} (use one of {sorted(readme.LANGUAGES)})")
        if b.kind not in readme.KINDS:
            problems.append(f"{b.id}: no runner for kind {b.kind!r}")
        if b.kind == "not-run" and not b.why:
            problems.append(f"{b.id}: not-run needs its reason in parentheses")
        expected = {"python": {"program", "fragment", "pytest", "not-run"},
                    "sh": {"shell", "servers", "install", "not-run"},
                    "json": {"parse"}, "text": {"text"}}.get(b.lang, set())
        if b.kind not in expected:
            problems.append(f"{b.id}: a {b.lang} block cannot be {b.kind!r}")
        if b.options.get("setup", "none") not in SETUPS:
            problems.append(f"{b.id}: unknown setup {b.options['setup']!r}")
    assert not problems, "\n".join(problems)
    assert len(RUN) >= 25, [b.id for b in ALL]


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, **extra}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(REPO)
    env.pop("VIRTUAL_ENV", None)
    return env


def _scratch(tmp_path: Path, block: readme.Block) -> Path:
    scratch = tmp_path / "scratch"
    shutil.copytree(REPO / "examples", scratch / "examples")
    setup = block.options.get("setup", "none")
    if block.kind in ("shell", "servers", "program"):
        SETUPS[setup][0](scratch)
    return scratch


def _private_net(argv: list[str], block: readme.Block) -> list[str]:
    """Its own network namespace (loopback only): a fixed port collides with nothing."""
    if block.options.get("net") != "private" and block.kind != "servers":
        return argv
    return ["bwrap", "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent", "--", *argv]


def _check(done: subprocess.CompletedProcess[str], block: readme.Block) -> None:
    assert done.returncode == 0, (
        f"README block at line {block.line} exited {done.returncode}\n--- block\n{block.code}"
        f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-6000:]}"
    )


def _fragment_program(block: readme.Block) -> str:
    body = textwrap.indent(block.code, "    ")
    backend = block.options.get("backend", "local")
    setup = block.options.get("setup", "none")
    return (
        "import functools\n\nimport anyio\n\nfrom tests.docs.harness import run_fragment\n\n\n"
        f"async def _fragment(sandbox):\n{body}\n\n"
        f"anyio.run(functools.partial(run_fragment, _fragment, backend={backend!r}, "
        f"setup={setup!r}))\n"
    )


def _servers_driver(block: readme.Block) -> str:
    """Start each command, wait until its port accepts, SIGTERM it, expect a clean exit."""
    logical = re.sub(r"\\\n\s*", " ", block.code)
    commands = [line.split("  #")[0].strip() for line in logical.splitlines()]
    commands = [c for c in commands if c and not c.startswith("#")]
    return textwrap.dedent(f"""
        import os, signal, socket, subprocess, sys, time
        for command in {commands!r}:
            port = 0
            for flag, default in (("sandlot mcp", 8765), ("sandlot serve", 8080)):
                if flag in command:
                    port = default
            words = command.split()
            if "--port" in words:
                port = int(words[words.index("--port") + 1])
            proc = subprocess.Popen(["bash", "-c", command], start_new_session=True)
            deadline = time.monotonic() + 90
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        sys.exit(f"{{command!r}} never listened on {{port}} (exit {{proc.poll()}})")
                    time.sleep(0.2)
            os.killpg(proc.pid, signal.SIGTERM)  # bash and the server it started
            code = proc.wait(timeout=60)
            if code not in (0, 128 + signal.SIGTERM, -signal.SIGTERM):
                sys.exit(f"{{command!r}} exited {{code}} after SIGTERM")
            print("served and stopped:", command)
    """)


def _with_server(server: str) -> str:
    """Start `server`, wait until it listens, run the arguments, stop the server."""
    words = server.split()
    port = int(words[words.index("--port") + 1]) if "--port" in words else 8080
    return textwrap.dedent(f"""
        {server} >server.log 2>&1 &
        server=$!
        trap 'kill -TERM $server; wait $server || true' EXIT
        for _ in $(seq 450); do
          (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && break
          sleep 0.2
        done
        "$@"
    """)


@pytest.mark.parametrize("block", RUN, ids=_id)
def test_readme_block(block: readme.Block, tmp_path: Path) -> None:
    if block.kind == "parse":
        config = json.loads(block.code)
        # An MCP client launches `command` from the user's PATH: after the quickstart's
        # activation, that is this environment's bin/.
        for name, server in config.get("mcpServers", {}).items():
            if "command" in server:
                found = shutil.which(server["command"], path=_env()["PATH"])
                assert found == str(BIN / server["command"]), (name, found)
        return
    scratch = _scratch(tmp_path, block)
    extra: dict[str, str] = {}
    if block.options.get("backend") == "docker":
        from tests.backends import docker as docker_backend

        engine = docker_backend.engine()
        image = engine.busybox_image()
        engine.docker("tag", image, "sandlot/sandbox:latest")  # the name the example uses
        extra.update(DOCKER_HOST=engine.host, SANDLOT_README_IMAGE=image)
    env = _env(**extra)
    if block.options.get("tools") == "verify":
        from tests.verify.support import TOOLS

        missing = [t for t in ("golangci-lint", "ruff", "mypy") if not (TOOLS / "bin" / t).exists()]
        require(not missing, f"verify tools missing: {missing} (setup.d/40-verify-tools.sh)")
        env["PATH"] = f"{TOOLS / 'bin'}{os.pathsep}{env['PATH']}"
    cwd = REPO if block.options.get("cwd") == "repo" else scratch
    if block.kind == "program":
        (scratch / "block.py").write_text(block.code, encoding="utf-8")
        argv = [sys.executable, "block.py"]
    elif block.kind == "fragment":
        (scratch / "block.py").write_text(_fragment_program(block), encoding="utf-8")
        argv = [sys.executable, "block.py"]
    elif block.kind == "pytest":
        (scratch / "test_block.py").write_text(block.code, encoding="utf-8")
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist",
                "-p", "no:cacheprovider", "test_block.py"]
    elif block.kind == "servers":
        (scratch / "driver.py").write_text(_servers_driver(block), encoding="utf-8")
        argv = [sys.executable, "driver.py"]
    elif block.kind == "install":
        _install(block, tmp_path, env)
        return
    else:
        (scratch / "block.sh").write_text("set -eu\n" + block.code, encoding="utf-8")
        argv = ["bash", str(scratch / "block.sh")]
    if "server" in block.options:
        (scratch / "with_server.sh").write_text(_with_server(block.options["server"]),
                                                encoding="utf-8")
        argv = ["bash", str(scratch / "with_server.sh"), *argv]
    done = subprocess.run(_private_net(argv, block), cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=240)
    _check(done, block)
    for text in filter(None, block.options.get("expect", "").split("|")):
        printed = done.stdout + done.stderr
        assert text in printed, f"README block at line {block.line}: no {text!r} in\n{printed}"
    if block.kind == "pytest":
        assert " passed" in done.stdout and "skipped" not in done.stdout, done.stdout


def _install(block: readme.Block, tmp_path: Path, env: dict[str, str]) -> None:
    """The install lines, as written, in a fresh virtualenv; the git URL is this clone's (its
    HEAD commit: the repository has no public remote here), and dependencies come from pip's
    cache or index as a user's would."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {**env, "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "VIRTUAL_ENV": str(venv), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("PYTHONPATH")
    # The venv module's bundled pip (23.x) cannot parse a git+file URL; the README asks for 24+.
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "pip>=24"],
                   env=env, check=True, timeout=240)
    script = re.sub(r"git\+https://\S+?sandlot\.git", f"git+file://{REPO}", block.code)
    work = tmp_path / "clone"  # what a clone holds: the tracked files
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True, timeout=60).stdout.decode().split("\0")
    for name in filter(None, tracked):
        if (REPO / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, work / name)
    python = str(venv / "bin" / "python")
    for line in filter(None, (ln.split("  #")[0].strip() for ln in script.splitlines())):
        # Each line installs sandlot itself, not "already satisfied" by the line before.
        subprocess.run([python, "-m", "pip", "uninstall", "-y", "-q", "sandlot"], env=env,
                       capture_output=True, timeout=120)
        done = subprocess.run(["bash", "-c", "set -eu\n" + line], cwd=work, env=env,
                              capture_output=True, text=True, timeout=480)
        _check(done, block)
        version = subprocess.run(["sandlot", "--version"], env=env, capture_output=True,
                                 text=True, timeout=60)
        assert version.stdout.startswith("sandlot "), (line, version)
        where = subprocess.run([python, "-c", "import sandlot; print(sandlot.__file__)"],
                               env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        assert where.stdout.startswith(str(venv)), (line, where)  # installed, not the source


def test_layout_names_paths_that_exist() -> None:
    """The README's Layout block: each entry of the first column, and every module and
    package it names under src/sandlot/, is in the repository."""
    (layout,) = [b for b in ALL if b.section == "Layout"]
    missing = []
    src = REPO / "src" / "sandlot"
    for line in layout.code.splitlines():
        first = line.split()[0] if line and not line[0].isspace() else ""
        for path in re.findall(r"[\w.-]+(?:/[\w.-]+)*/?", first):
            if not (REPO / path).exists():
                missing.append(path)
        if first == "src/sandlot/" or (not first and line.strip()):
            rest = line.removeprefix("src/sandlot/")
            for name in re.findall(r"(?<![\w/])([a-z_]+\.py|[a-z_]+/)", rest):
                if not any((where / name).exists() for where in (src, src / "backends")):
                    missing.append(f"src/sandlot/{name}")
    assert not missing, f"README's Layout names paths that do not exist: {missing}"
