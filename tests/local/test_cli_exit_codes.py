"""The CLI's exit codes and words (issue 26.10), through real `python -m sandlot` processes.

`sandlot exec` and `sandlot run` follow docker run's convention: 125 when sandlot itself failed
or refused its input, 126/127 when the command cannot be executed / is not found, otherwise the
command's own status. Refusals that depend only on the input come before any sandbox is made:
the local provider's root (on_close=leave, so a sandbox made would stay) must stay empty.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _sandlot(*args: str, env: dict[str, str] | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "SANDLOT_PROVIDER"}
    base["PYTHONPATH"] = str(REPO / "src")
    return subprocess.run([sys.executable, "-m", "sandlot", *args], capture_output=True,
                          text=True, timeout=120, env={**base, **(env or {})}, cwd=cwd,
                          check=False)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    made = tmp_path / "sandboxes"
    made.mkdir()
    return made


def _config(root: Path) -> str:
    return json.dumps({"type": "local", "root": str(root), "on_close": "leave"})


def _git_repo(where: Path) -> Path:
    env = {**os.environ, "GIT_AUTHOR_NAME": "Ada", "GIT_AUTHOR_EMAIL": "ada@example.org",
           "GIT_COMMITTER_NAME": "Ada", "GIT_COMMITTER_EMAIL": "ada@example.org",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(where)}
    repo = where / "repo"
    repo.mkdir()
    (repo / "README").write_text("hello\n")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "initial"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True, env=env,
                       capture_output=True)
    return repo


def test_exec_exit_codes_separate_sandlot_from_the_command(root: Path, tmp_path: Path) -> None:
    config = ["--provider-config", _config(root), "-q"]
    script = tmp_path / "not-executable.sh"
    script.write_text("echo never\n")
    assert _sandlot("exec", *config, "--", "exit 1").returncode == 1
    assert _sandlot("exec", *config, "--", "exit 3").returncode == 3
    assert _sandlot("exec", *config, "--", "no-such-command-here").returncode == 127
    assert _sandlot("exec", *config, "--", str(script), "arg").returncode == 126
    # sandlot's own failures: 125, never a status a command could have given.
    unreachable = _sandlot("exec", "-q", "--provider-config", json.dumps(
        {"type": "docker", "docker_host": "unix:///nonexistent.sock", "image": "x",
         "on_close": "delete"}), "--", "true")
    assert unreachable.returncode == 125, unreachable.stderr
    assert "cannot reach the Docker engine" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr
    bad_config = _sandlot("exec", "--provider-config", '{"type": "local", "nope": 1}', "--",
                          "true")
    assert bad_config.returncode == 125
    # A command line argparse cannot parse: 2, with the usage.
    assert _sandlot("exec", "--timeout", "soon", "--", "true").returncode == 2
    assert _sandlot("exec", *config).returncode == 2  # no command


def test_run_exit_codes(root: Path, tmp_path: Path) -> None:
    repo = _git_repo(tmp_path)
    config = ["--provider-config", _config(root), "-q", "--repo", str(repo)]
    assert _sandlot("run", *config, "--branch", "a", "--", "exit 4").returncode == 4
    assert _sandlot("run", *config, "--branch", "b", "--", "no-such-cmd").returncode == 127
    outside = _sandlot("run", "--provider-config", _config(root), "--repo", str(tmp_path),
                       "--branch", "c", "--", "true")
    assert outside.returncode == 125, outside.stderr
    assert "not in a git repository" in outside.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["exec", "--timeout", "-5", "--", "true"], "--timeout must be a positive number"),
        (["exec", "--idle-timeout", "0", "--", "true"], "--idle-timeout must be a positive"),
        (["exec", "--forward", "70000", "--", "true"], "--forward 70000: ports are 1-65535"),
        (["exec", "--forward", "80:0", "--", "true"], "--forward 80:0: ports are 1-65535"),
        (["exec", "--copy-in", "/nonexistent", "--", "true"], "--copy-in /nonexistent: host "
                                                              "path does not exist"),
        (["exec", "--env", "A B=1", "--", "true"], "invalid environment variable name 'A B'"),
        (["run", "--repo", "/nonexistent", "--branch", "x", "--", "true"],
         "--repo /nonexistent: host path does not exist"),
        (["run", "--repo", ".", "--branch", "x", "--timeout", "-5", "--", "true"],
         "--timeout must be a positive number"),
    ],
)
def test_bad_input_is_refused_with_125_before_any_sandbox(
    root: Path, args: list[str], says: str
) -> None:
    command, *rest = args
    done = _sandlot(command, "--provider-config", _config(root), *rest, cwd=REPO)
    assert done.returncode == 125, done.stderr
    assert says in done.stderr
    assert "creating" not in done.stderr
    assert list(root.iterdir()) == []


def test_serve_refuses_a_public_bind_before_creating_anything(root: Path) -> None:
    done = _sandlot("serve", "--provider-config", _config(root), "--host", "0.0.0.0",
                    "--port", "0", env={"SANDLOT_TOKEN": ""})
    assert done.returncode == 1, done.stderr  # serve runs no command of yours: errors are 1
    assert "SANDLOT_TOKEN" in done.stderr
    assert "creating" not in done.stderr
    assert list(root.iterdir()) == []


def test_the_provider_variable_is_named_when_it_is_wrong() -> None:
    done = _sandlot("exec", "--", "id", env={"SANDLOT_PROVIDER": "docker"})
    assert done.returncode == 125
    assert "$SANDLOT_PROVIDER: invalid provider configuration: not valid JSON" in done.stderr
    assert '{"type": "docker"}' in done.stderr
    flag = _sandlot("exec", "--provider-config", "docker", "--", "id")
    assert flag.returncode == 125
    assert "--provider-config: invalid provider configuration: not valid JSON" in flag.stderr


def test_errors_and_notes_name_flags_not_keyword_arguments(root: Path, tmp_path: Path) -> None:
    repo = _git_repo(tmp_path)
    config = ["--provider-config", _config(root), "--repo", str(repo)]
    left = _sandlot("run", *config, "--branch", "one", "--",
                    "echo x > new.txt && git -c user.name=A -c user.email=a@b commit -qm c "
                    "--allow-empty && echo y > other.txt")
    assert left.returncode == 0, left.stderr
    assert "pass --commit-uncommitted MESSAGE to include them" in left.stderr
    again = _sandlot("run", *config, "--branch", "one", "--", "true")
    assert again.returncode == 125
    assert "already exists" in again.stderr and "pass --force to move it" in again.stderr
    coder = _sandlot("exec", "--provider-config", json.dumps(
        {"type": "coder", "coder_binary": "/nonexistent/coder", "template": "t",
         "on_close": "delete"}), "--", "true")
    assert coder.returncode == 125
    assert "--provider-config '{\"type\": \"coder\", \"coder_binary\": " in coder.stderr
    for done in (left, again, coder):
        assert "=True" not in done.stderr and "='" not in done.stderr


def test_the_python_api_keeps_its_keyword_wording() -> None:
    from sandlot.backends.coder.cli import CoderCLI
    from sandlot.errors import CODER_BINARY, CoderCLINotFoundError

    with pytest.raises(CoderCLINotFoundError) as caught:
        _ = CoderCLI("/nonexistent/coder").path
    assert "pass coder_binary='/path/to/coder'" in str(caught.value)
    assert caught.value.hint is CODER_BINARY
