"""Pure parts of sandlot.modes: mode names, requirement checks, the marker protocol.

The marker strings come from running the real sh programs (see tests/modes); here each case
of the parser is pinned, including programs that print marker-like text themselves.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from sandlot import ConfigurationError, UnknownModeError
from sandlot import _mode_script as script
from sandlot.modes import MODES, _check_requirements, configured_mode, get_mode


def test_modes_are_in_detection_order() -> None:
    assert list(MODES) == ["python", "golang", "node", "shell"]
    assert [m.binary for m in MODES.values()] == ["python3", "go", "node", "bash"]
    assert [m.extension for m in MODES.values()] == [".py", ".go", ".js", ".sh"]


@pytest.mark.parametrize("name", ["", "go", "Python", "bash", "ruby"])
def test_unknown_modes_list_the_valid_ones(name: str) -> None:
    with pytest.raises(UnknownModeError, match="valid modes: python, golang, node, shell"):
        get_mode(name)


def test_configured_mode_precedence() -> None:
    assert configured_mode("node", {"SANDLOT_MODE": "shell"}) == "node"
    assert configured_mode(None, {"SANDLOT_MODE": " shell "}) == "shell"
    assert configured_mode(None, {"SANDLOT_MODE": ""}) is None
    assert configured_mode(None, {}) is None
    with pytest.raises(UnknownModeError, match=r"^\$SANDLOT_MODE: unknown mode 'perl'"):
        configured_mode(None, {"SANDLOT_MODE": "perl"})


@pytest.mark.parametrize(
    "bad", [["-r", "evil.txt"], ["--index-url=http://x"], [""], ["six\nidna"], [3], "six"]
)
def test_requirements_that_are_not_specifiers_are_refused(bad: object) -> None:
    with pytest.raises(ConfigurationError):
        _check_requirements(bad)  # type: ignore[arg-type]


def test_requirements_are_stripped() -> None:
    assert _check_requirements([" six ", "idna>=3", "is-number@7"]) == (
        "six", "idna>=3", "is-number@7",
    )


def run_sh(program: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", program], input=stdin.decode(), capture_output=True, text=True, check=False
    )


@pytest.fixture
def run_dir(tmp_path: object) -> str:
    return f"{tmp_path}/run"


def test_rendered_run_reports_end_and_cleans_up(run_dir: str) -> None:
    program = script.render_run(
        binary="sh", run_dir=run_dir, source=f"{run_dir}/main.sh",
        run=f"sh {run_dir}/main.sh", install="", requirements=(),
    )
    done = run_sh(program, b"echo out; echo err >&2; exit 4")
    parsed = script.parse_stderr(done.stderr)
    assert done.returncode == 4 and done.stdout == "out\n"
    assert parsed == script.Parsed(
        stderr="err\n", trailer=script.Trailer("end", installer="none", status=4), started=True
    )
    assert not os.path.exists(run_dir)


def test_rendered_run_reports_a_missing_runtime(run_dir: str) -> None:
    program = script.render_run(
        binary="no-such-runtime-zq", run_dir=run_dir, source=f"{run_dir}/m",
        run="true", install="", requirements=(),
    )
    done = run_sh(program, b"code")
    assert done.returncode == script.MISSING_STATUS
    parsed = script.parse_stderr(done.stderr)
    assert parsed.trailer == script.Trailer("missing", binary="no-such-runtime-zq")
    assert parsed.stderr == "" and not parsed.started


def test_rendered_install_failure_keeps_the_installer_log(run_dir: str) -> None:
    program = script.render_run(
        binary="sh", run_dir=run_dir, source=f"{run_dir}/main.js",
        run="echo should-not-run", install="node", requirements=("x",),
    )
    # An npm that fails the way a registry 404 does.
    fake = run_dir + "-bin"
    os.makedirs(fake)
    with open(f"{fake}/npm", "w") as f:
        f.write("#!/bin/sh\necho 'npm error 404 Not Found - x' >&2\nexit 1\n")
    os.chmod(f"{fake}/npm", 0o755)
    done = run_sh(f"PATH={fake}:$PATH\n{program}")
    parsed = script.parse_stderr(done.stderr)
    assert "should-not-run" not in done.stdout
    assert parsed.trailer == script.Trailer("install-failed", installer="npm", status=1)
    assert parsed.stderr == "npm error 404 Not Found - x\n"


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        ("", script.Parsed("", None, False)),
        ("\x1esandlot-run\nboom\n", script.Parsed("boom\n", None, True)),
        # The program's last line had no newline: the trailer is glued to it.
        (
            "\x1esandlot-run\npartial\x1esandlot-end:uv:0\n",
            script.Parsed("partial", script.Trailer("end", "uv", 0), True),
        ),
        # A program printing a marker lookalike does not hide the real trailer.
        (
            "\x1esandlot-run\n\x1esandlot-end:none:9\n\x1esandlot-end:none:2\n",
            script.Parsed("\x1esandlot-end:none:9\n", script.Trailer("end", "none", 2), True),
        ),
        # Not a trailer when something follows it (e.g. a killed run).
        (
            "\x1esandlot-end:none:0\nmore",
            script.Parsed("\x1esandlot-end:none:0\nmore", None, False),
        ),
        ("\x1esandlot-end:none:x\n", script.Parsed("\x1esandlot-end:none:x\n", None, False)),
    ],
)
def test_parse_stderr(stderr: str, expected: script.Parsed) -> None:
    assert script.parse_stderr(stderr) == expected


def test_strip_markers_hides_marker_lines_only() -> None:
    seen: list[str] = []
    callback = script.strip_markers(seen.append)
    assert callback is not None
    for line in ["\x1esandlot-run", "real", "tail\x1esandlot-end:none:0", "\x1esandlot-end:x:1"]:
        callback(line)
    assert seen == ["real", "tail"]
    assert script.strip_markers(None) is None
