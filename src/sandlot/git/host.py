"""git on the host: one place that runs it, with a clean environment and typed errors."""

from __future__ import annotations

import asyncio
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from ..errors import GitError, GitNotFoundError, InvalidBranchNameError, NotAGitRepositoryError


@dataclass(frozen=True)
class GitRun:
    code: int
    stdout: bytes
    stderr: str

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", "surrogateescape")


def _environment(extra: dict[str, str] | None) -> dict[str, str]:
    # The caller's GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE ... would redirect every command.
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_CONFIG_NOSYSTEM": "1"})
    env.update(extra or {})
    return env


async def git(
    repo: Path, *args: str, env: dict[str, str] | None = None, check: bool = True,
    what: str = "",
) -> GitRun:
    """`git -C repo <args>`; a non-zero exit raises `GitError` saying `what` failed."""
    binary = shutil.which("git")
    if binary is None:
        raise GitNotFoundError("git is not installed on this host; install it (apt-get install "
                               "git)")
    proc = await asyncio.create_subprocess_exec(
        binary, "-C", str(repo), "-c", "gc.auto=0", "-c", "maintenance.auto=false", *args,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, env=_environment(env),
    )
    out, err = await proc.communicate()
    done = GitRun(proc.returncode or 0, out, err.decode("utf-8", "replace"))
    if check and done.code != 0:
        raise GitError(f"{what or 'git ' + args[0]} failed (exit {done.code})", stderr=done.stderr)
    return done


async def toplevel(repo: str | os.PathLike[str]) -> Path:
    """The work tree root of the repository containing `repo`."""
    path = Path(repo)
    if not path.is_dir():
        raise NotAGitRepositoryError(f"{str(path)!r} is not a directory; give a git repository")
    found = await git(path, "rev-parse", "--show-toplevel", check=False)
    if found.code != 0:
        raise NotAGitRepositoryError(
            f"{str(path)!r} is not in a git repository (git init it, or give the repository's "
            "path as repo=)", stderr=found.stderr,
        )
    return Path(found.text.strip())


async def check_branch_name(repo: Path, branch: str) -> str:
    """`branch` if git accepts it as a branch name; else `InvalidBranchNameError`."""
    if not branch or branch.startswith("-") or any(c in branch for c in "\0\n\r"):
        raise InvalidBranchNameError(
            f"{branch!r} is not a usable branch name (empty, a leading '-', or a control "
            "character); use e.g. sandlot/fix-1"
        )
    done = await git(repo, "check-ref-format", "--branch", branch, check=False)
    if done.code != 0 or done.text.strip() != branch:
        raise InvalidBranchNameError(
            f"{branch!r} is not a valid branch name (see `git check-ref-format`); use letters, "
            "digits, '-', '_', '.' and '/' (no '..', no spaces, no trailing '.lock')",
            stderr=done.stderr,
        )
    return branch


async def branch_exists(repo: Path, branch: str) -> bool:
    """Whether branch `branch` exists in `repo`, once its name is known to be valid
    (`InvalidBranchNameError` otherwise). Both checks run at once: each is a git process."""
    _, shown = await asyncio.gather(
        check_branch_name(repo, branch),
        git(repo, "show-ref", "--verify", "--quiet", f"refs/heads/{branch}", check=False),
    )
    return shown.code == 0
