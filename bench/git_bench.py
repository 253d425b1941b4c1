"""The git round trip against the raw git commands it replaces, in one run.

push_in of a repository with 5,000 commits against `git clone --no-local` of the same commit plus
one copy of the clone into the sandbox; pull_out of 100 new commits against `git bundle create`
in the sandbox, one copy out and `git fetch` of the bundle. Local and fake Coder backends.
Goal: within 1.2x.
"""

from __future__ import annotations

import itertools
import subprocess
import tempfile
from pathlib import Path

import sandlot
from sandlot import Sandbox, git
from sandlot.testing import AgentSpec, FakeCoderDeployment

from .core import Measurement, interleaved
from .measures import Scratch, raw_shell

_IDENTITY = "-c user.name=bench -c user.email=bench@example.org"


def make_history(path: Path, commits: int) -> Path:
    """A repository with `commits` commits (fast-import: seconds, not minutes)."""
    path.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    stream = []
    for i in range(commits):
        body = f"line {i}\n" * 20
        stream.append(
            f"commit refs/heads/main\ncommitter bench <b@example.org> {1_600_000_000 + i} +0000\n"
            f"data {len(f'c{i}')}\nc{i}\n"
            f"M 644 inline file{i % 200}.txt\ndata {len(body)}\n{body}\n"
        )
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"],
                   input="".join(stream).encode(), check=True)
    subprocess.run(["git", "-C", str(path), "checkout", "-q", "main"], check=True)
    return path


async def _measure(backend: str, sandbox: Sandbox, repo: Path, rounds: int) -> list[Measurement]:
    counter = itertools.count()
    rows: list[Measurement] = []
    slug = "".join(c for c in backend if c.isalnum())  # each backend its own branch names

    async def subject_in() -> None:
        dest = f"{sandbox.worktree}/in-{next(counter)}"
        await git.push_in(sandbox, repo=str(repo), dest=dest)
        await sandbox.exec(["rm", "-rf", dest], check=True)

    async def raw_in() -> None:
        dest = f"{sandbox.worktree}/raw-{next(counter)}"
        with tempfile.TemporaryDirectory() as tmp:
            await raw_shell(f"git clone -q --no-local '{repo}' '{tmp}/c'")
            await sandbox.copy_in(f"{tmp}/c", dest)
        await sandbox.exec(["rm", "-rf", dest], check=True)

    s, b = await interleaved(subject_in, raw_in, rounds=rounds, warmup=1)
    rows.append(Measurement("git", backend, "push_in, 5,000 commits",
                            "git clone --no-local + copy_in", s, b, "s", target="<= 1.2x"))

    checkout = await git.push_in(sandbox, repo=str(repo), dest=f"{sandbox.worktree}/work")
    await sandbox.exec(
        f"for i in $(seq 100); do echo $i >> new.txt; git add new.txt; "
        f"git {_IDENTITY} commit -qm n$i; done", cwd=checkout.path, check=True,
    )

    async def subject_out() -> None:
        await git.pull_out(sandbox, repo=str(repo), branch=f"bench/{slug}/out-{next(counter)}",
                           dest=checkout.path)

    async def raw_out() -> None:
        bundle = f"{checkout.path}/.git/raw.bundle"
        await sandbox.exec(["git", "bundle", "create", "-q", bundle, "HEAD",
                            f"^{checkout.base}"], cwd=checkout.path, check=True)
        with tempfile.TemporaryDirectory() as tmp:
            await sandbox.copy_out(bundle, f"{tmp}/b.bundle")
            await raw_shell(f"git -C '{repo}' fetch -q '{tmp}/b.bundle' "
                            f"HEAD:refs/heads/bench/{slug}/raw-{next(counter)}")

    s, b = await interleaved(subject_out, raw_out, rounds=rounds, warmup=1)
    rows.append(Measurement("git", backend, "pull_out, 100 commits",
                            "bundle + copy_out + git fetch", s, b, "s", target="<= 1.2x"))
    return rows


async def run(quick: bool = False) -> list[Measurement]:
    rounds = 3 if quick else 8
    rows: list[Measurement] = []
    with Scratch() as scratch:
        repo = make_history(scratch / "history", 1000 if quick else 5000)
        async with sandlot.local().session() as sandbox:
            rows += await _measure("local", sandbox, repo, rounds)
        fake = FakeCoderDeployment(scratch / "coder")
        try:
            fake.add_template("git", agents=[AgentSpec("main")])
            exe = fake.install(scratch / "bin")
            provider = sandlot.coder(template="git", on_close="delete", coder_binary=str(exe),
                                     coder_url=fake.url, session_token=fake.token)
            async with provider.session() as sandbox:
                rows += await _measure("coder (fake)", sandbox, repo, rounds)
        finally:
            fake.shutdown()
    return rows
