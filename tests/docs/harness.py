"""What a README ``fragment`` block runs in: a sandbox on its tier, prepared by a named setup.

tests/docs/test_readme.py writes each fragment into a program of its own (``async def
_fragment(sandbox): <block>``) that calls `run_fragment`; it runs in a scratch directory (the
program's cwd) holding a copy of examples/. The fragment gets ``sandbox`` and nothing else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

import sandlot

if TYPE_CHECKING:
    from sandlot.testing import FakeCoderDeployment

REPO = Path(__file__).resolve().parents[2]
Fragment = Callable[[sandlot.Sandbox], Awaitable[None]]

#: The workspace the coder tier's sandbox is (the durable-process example attaches to "ws").
CODER_WORKSPACE = "ws"


def git_repo(scratch: Path) -> None:
    """Make `scratch` a git repository whose `make fix` changes a tracked file."""
    (scratch / "app.txt").write_text("status: bug\n", encoding="utf-8")
    (scratch / "Makefile").write_text("fix:\n\tsed -i s/bug/fixed/ app.txt\n", encoding="utf-8")
    agent = scratch / "agent.sh"   # the fan-out example's agent: leaves a file uncommitted
    agent.write_text('#!/bin/sh\necho "$1" > "attempt-$SANDLOT_FANOUT_INDEX.txt"\n',
                     encoding="utf-8")
    agent.chmod(0o755)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    for argv in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"],
                 ["git", "commit", "-qm", "initial"]):
        subprocess.run(argv, cwd=scratch, env=env, check=True)


def two_workspaces(scratch: Path) -> None:
    """./svc: a Go module (go 1.21, which the example edits); ./lib: a node package with a test."""
    shutil.copytree(REPO / "examples" / "intstats", scratch / "svc")
    mod = scratch / "svc" / "go.mod"
    mod.write_text(mod.read_text(encoding="utf-8").replace("go 1.22", "go 1.21"), encoding="utf-8")
    lib = scratch / "lib"
    lib.mkdir()
    (lib / "package.json").write_text(
        '{"name": "lib", "version": "1.0.0", "scripts": {"test": "node --test"}}\n',
        encoding="utf-8")
    (lib / "index.ts").write_text("export const one = 1;\n", encoding="utf-8")
    (lib / "one.test.js").write_text(
        'const test = require("node:test");\nconst assert = require("node:assert");\n'
        'test("one", () => assert.strictEqual(1, 1));\n', encoding="utf-8")


def coder_templates(scratch: Path) -> None:
    """./repo for the fan-out example (its templates are made on the deployment below)."""
    (scratch / "repo").mkdir()
    (scratch / "repo" / "Makefile").write_text("test:\n\ttrue\n", encoding="utf-8")


def go_project(scratch: Path) -> None:
    """examples/intstats with one failing test, in the scratch directory (copied in below)."""
    shutil.copytree(REPO / "examples" / "intstats", scratch / "project")
    (scratch / "project" / "fail_test.go").write_text(
        'package intstats\n\nimport "testing"\n\n'
        'func TestPlantedFailure(t *testing.T) { t.Fatal("planted by tests/docs") }\n',
        encoding="utf-8",
    )


#: name -> what it prepares in the scratch directory before the sandbox is made, and the host
#: directory (relative to the scratch directory) copied into the sandbox's worktree.
SETUPS: dict[str, tuple[Callable[[Path], None], str | None]] = {
    "none": (lambda scratch: None, None),
    "git-repo": (git_repo, None),
    "go-project": (go_project, "project"),
    "two-workspaces": (two_workspaces, None),
    "app-dir": (lambda scratch: shutil.copytree(REPO / "examples" / "wordcount", scratch / "app"),
                None),
    "coder-templates": (coder_templates, None),
}


async def run_fragment(fragment: Fragment, *, backend: str = "local", setup: str = "none") -> None:
    scratch = Path.cwd()
    prepare, copy = SETUPS[setup]
    prepare(scratch)
    if backend == "local":
        await _run(sandlot.local(), fragment, scratch, copy)
    elif backend == "docker":  # the engine and image test_readme.py names in the environment
        provider = sandlot.docker(os.environ["SANDLOT_README_IMAGE"], on_close="delete")
        await _run(provider, fragment, scratch, copy)
    elif backend == "coder":
        await _on_fake_coder(fragment, scratch, copy)
    else:
        raise ValueError(f"unknown backend {backend!r} for a README fragment")


async def _run(provider: sandlot.IsolatedSandboxProvider, fragment: Fragment, scratch: Path,
               copy: str | None) -> None:
    async with provider.session() as sandbox:
        if copy:
            await sandbox.copy_in(str(scratch / copy), sandbox.worktree)
        await fragment(sandbox)


async def _on_fake_coder(fragment: Fragment, scratch: Path, copy: str | None) -> None:
    from sandlot.testing import AgentSpec, FakeCoderDeployment

    with FakeCoderDeployment(scratch / ".coder-deployment") as coder:
        coder.add_template("readme", agents=[AgentSpec("main", directory="project")])
        coder.install(scratch / ".coder-bin")
        # As a user logged in with `coder login`: the CLI on PATH, the deployment in its env.
        os.environ.update(coder.env())
        if (scratch / "repo").is_dir():  # setup=coder-templates: what the examples name
            _coder_templates(coder)
        provider = sandlot.coder(template="readme", workspace_name=CODER_WORKSPACE,
                                 on_close="delete", **coder.access())
        await _run(provider, fragment, scratch, copy)
        await anyio.to_thread.run_sync(coder.shutdown)


def _coder_templates(coder: FakeCoderDeployment) -> None:
    """Templates `docker` (parameters cpu, region) and `dev`, and alice's workspace `dev`."""
    from sandlot.testing import AgentSpec, ParameterSpec

    coder.add_template("docker", agents=[AgentSpec("main", directory="project")],
                       parameters=[ParameterSpec("cpu"), ParameterSpec("region")])
    coder.add_template("dev", agents=[AgentSpec("main", directory="project")])
    coder.add_user("alice")
    subprocess.run([str(coder.coder), "create", "alice/dev", "-t", "docker", "--parameter",
                    "cpu=2", "--parameter", "region=eu", "--yes"], check=True,
                   capture_output=True, env={**os.environ, **coder.env()})
