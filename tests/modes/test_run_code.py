"""run_code and health with real runtimes, on every backend that offers a toolchain sandbox."""

from __future__ import annotations

import re

import pytest

from sandlot import RequirementsInstallError, RuntimeNotFoundError, Sandbox
from sandlot.modes import RUNS_DIR, health, run_code

pytestmark = pytest.mark.anyio

#: Per mode: code that proves which runtime ran it, writes to both streams and exits with 3.
PROGRAMS = {
    "python": (
        "import sys, platform\n"
        "print('impl', platform.python_implementation())\n"
        "print('warn', file=sys.stderr)\n"
        "sys.exit(3)\n",
        "impl CPython\n",
    ),
    "golang": (
        'package main\n\nimport (\n\t"fmt"\n\t"os"\n\t"runtime"\n)\n\n'
        'func main() {\n\tfmt.Println("impl", runtime.Compiler)\n'
        '\tfmt.Fprintln(os.Stderr, "warn")\n\tos.Exit(3)\n}\n',
        "impl gc\n",
    ),
    "node": (
        "console.log('impl', typeof process.versions.v8);\n"
        "console.error('warn');\n"
        "process.exit(3);\n",
        "impl string\n",
    ),
    "shell": (
        'echo impl "${BASH_VERSINFO[0]:+bash}"\necho warn >&2\nexit 3\n',
        "impl bash\n",
    ),
}

VERSIONS = {
    "python": r"^Python 3\.\d+\.\d+",
    "golang": r"^go version go1\.\d+",
    "node": r"^v\d+\.\d+\.\d+$",
    "shell": r"^GNU bash, version \d+\.\d+",
}


async def runs_left(sandbox: Sandbox) -> list[str]:
    listing = await sandbox.exec(f"ls -A {sandbox.worktree}/{RUNS_DIR} 2>/dev/null || true")
    return listing.stdout.split()


@pytest.mark.parametrize("mode", list(PROGRAMS))
async def test_each_mode_runs_its_runtime(toolchain: Sandbox, mode: str) -> None:
    code, expected = PROGRAMS[mode]
    result = await run_code(toolchain, code, mode=mode)
    assert result.mode == mode
    assert result.stdout == expected
    assert result.stderr == "warn\n"
    assert result.exit_code == 3  # the program's own status, also for Go
    assert not result.timed_out and not result.truncated
    assert await runs_left(toolchain) == []


@pytest.mark.parametrize("mode", list(VERSIONS))
async def test_health_reports_mode_and_version(toolchain: Sandbox, mode: str) -> None:
    report = await health(toolchain, mode)
    assert report.mode == mode
    assert re.match(VERSIONS[mode], report.runtime_version), report.runtime_version


async def test_go_compile_error_is_in_stderr(toolchain: Sandbox) -> None:
    code = 'package main\n\nfunc main() {\n\tfmt.Println("no import")\n}\n'
    result = await run_code(toolchain, code, mode="golang")
    assert result.exit_code != 0
    assert "undefined: fmt" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("mode", "code", "error"),
    [
        ("python", 'package main\nfunc main() {}\n', "SyntaxError"),
        ("shell", "def f(:\n    pass\n", "syntax error"),
        ("node", "import sys\nprint(sys.argv)\n", "SyntaxError"),
        ("golang", "print('hello')\n", "expected 'package'"),
    ],
)
async def test_wrong_language_fails_in_that_runtime(
    toolchain: Sandbox, mode: str, code: str, error: str
) -> None:
    result = await run_code(toolchain, code, mode=mode)
    assert result.mode == mode
    assert result.exit_code != 0
    assert error in result.stderr


async def test_code_runs_in_the_worktree_with_empty_stdin(toolchain: Sandbox) -> None:
    code = (
        "import os, sys\n"
        "open('from-run.txt', 'w').write(sys.stdin.read() + 'kept')\n"
        "print(os.getcwd())\n"
    )
    result = await run_code(toolchain, code, mode="python")
    assert result.stdout.strip() == toolchain.worktree
    again = await run_code(toolchain, "cat from-run.txt; rm from-run.txt", mode="shell")
    assert again.stdout == "kept"


async def test_timeout_ends_the_run_keeps_output_and_cleans_up(toolchain: Sandbox) -> None:
    code = "import time\nprint('started', flush=True)\nwhile True:\n    time.sleep(0.1)\n"
    result = await run_code(toolchain, code, mode="python", timeout=2)
    assert result.timed_out
    assert result.stdout == "started\n"
    assert await runs_left(toolchain) == []


async def test_callbacks_stream_lines_without_markers(toolchain: Sandbox) -> None:
    out: list[str] = []
    err: list[str] = []
    code = "echo one; echo two >&2; printf 'no newline' >&2"
    result = await run_code(
        toolchain, code, mode="shell", on_stdout=out.append, on_stderr=err.append
    )
    assert out == ["one"]
    assert err == ["two", "no newline"]
    assert result.stderr == "two\nno newline"


async def test_truncated_stderr_still_reports_the_run(toolchain: Sandbox) -> None:
    code = "import sys\nsys.stderr.write('x' * 200000)\nsys.exit(5)\n"
    result = await run_code(toolchain, code, mode="python", max_output=1000)
    assert result.exit_code == 5
    assert result.stderr_truncated
    assert result.stderr == "x" * len(result.stderr) and 0 < len(result.stderr) <= 1000


async def test_configured_mode_with_missing_runtime(toolchain: Sandbox) -> None:
    # A PATH holding nothing but sh: the run's program starts, the runtime is not found.
    only_sh = f"{toolchain.worktree}/only-sh"
    await toolchain.exec(
        f'mkdir -p {only_sh} && ln -sf "$(command -v sh)" {only_sh}/sh', check=True
    )
    with pytest.raises(RuntimeNotFoundError) as caught:
        await run_code(toolchain, "package main", mode="golang", env={"PATH": only_sh})
    assert str(caught.value).startswith("mode=golang but 'go' not found in PATH")
    assert caught.value.mode == "golang"


# ---- requirements ------------------------------------------------------------------------


async def path_without_uv(sandbox: Sandbox) -> str:
    """The sandbox's PATH minus every directory holding a `uv` executable."""
    out = await sandbox.exec(
        'IFS=:; for d in $PATH; do [ -x "$d/uv" ] || printf "%s:" "$d"; done', check=True
    )
    return out.stdout.rstrip(":")


async def test_python_requirements_with_uv(toolchain: Sandbox) -> None:
    has_uv = await toolchain.exec("command -v uv")
    assert has_uv.ok, "toolchain sandboxes must have uv on PATH (scripts/setup.d/40-uv.sh)"
    code = "import six\nprint(six.PY3)\nprint(six.__file__)\n"
    result = await run_code(toolchain, code, mode="python", requirements=["six"])
    assert result.exit_code == 0, result.stderr
    py3, location = result.stdout.splitlines()
    assert py3 == "True"
    # Installed into the run's own directory (ahead of any six the image may have), which is
    # gone once the run ends.
    assert location.startswith(f"{toolchain.worktree}/{RUNS_DIR}/") and "/.deps/" in location
    assert result.installer == "uv"
    assert result.notes == ()
    assert await runs_left(toolchain) == []


async def test_python_requirements_fall_back_to_pip(toolchain: Sandbox) -> None:
    env = {"PATH": await path_without_uv(toolchain)}
    code = "import idna\nprint(idna.decode('xn--bcher-kva'))\n"
    result = await run_code(toolchain, code, mode="python", requirements=["idna"], env=env)
    assert (result.exit_code, result.stdout) == (0, "bücher\n"), result.stderr
    assert result.installer == "pip"
    assert any("uv not found" in note and "pip" in note for note in result.notes)


async def test_node_requirements_with_npm(toolchain: Sandbox) -> None:
    code = "const isNumber = require('is-number');\nconsole.log(isNumber('42'), isNumber('x'));\n"
    result = await run_code(toolchain, code, mode="node", requirements=["is-number@7"])
    assert (result.exit_code, result.stdout) == (0, "true false\n"), result.stderr
    assert result.installer == "npm"
    assert await runs_left(toolchain) == []


@pytest.mark.parametrize(
    ("mode", "marker_code", "needle"),
    [
        ("python", "open('ran.txt', 'w').close()", "sandlot-no-such-package-zq"),
        ("node", "require('fs').writeFileSync('ran.txt', '')", "sandlot-no-such-package-zq"),
    ],
)
async def test_install_failure_is_reported_and_code_not_run(
    toolchain: Sandbox, mode: str, marker_code: str, needle: str
) -> None:
    with pytest.raises(RequirementsInstallError) as caught:
        await run_code(toolchain, marker_code, mode=mode, requirements=[needle])
    error = caught.value
    assert error.installer in ("uv", "pip", "npm")
    assert needle in error.stderr  # the installer's own words
    assert error.exit_code not in (0, None)
    assert "the code was not run" in str(error)
    exists = await toolchain.exec("test -e ran.txt")
    assert exists.exit_code == 1
    assert await runs_left(toolchain) == []


@pytest.mark.parametrize("mode", ["golang", "shell"])
async def test_requirements_are_ignored_where_there_is_no_installer(
    toolchain: Sandbox, mode: str
) -> None:
    code = {"golang": 'package main\n\nfunc main() { println("ok") }\n', "shell": "echo ok >&2"}
    result = await run_code(toolchain, code[mode], mode=mode, requirements=["six"])
    assert (result.exit_code, result.stderr) == (0, "ok\n")
    assert result.installer is None
    assert result.notes == (f"requirements are ignored in {mode} mode",)
