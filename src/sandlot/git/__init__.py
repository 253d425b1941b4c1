"""The git round trip: a host repository into a sandbox, the agent's commits back as a branch.

    from sandlot import git

    checkout = await git.push_in(sandbox, repo=".")
    await sandbox.exec("make fix && git commit -qam 'fix'", cwd=checkout.path)
    result = await git.pull_out(sandbox, repo=".", branch="sandlot/fix-1")

It talks only to the `Sandbox` interface, so it works on every backend; the sandbox needs git.
"""

from .roundtrip import (
    BASE_REF,
    Commit,
    FileChange,
    FileStat,
    GitCheckout,
    GitDiff,
    PullResult,
    diff,
    pull_out,
    push_in,
)

__all__ = [
    "BASE_REF",
    "Commit",
    "FileChange",
    "FileStat",
    "GitCheckout",
    "GitDiff",
    "PullResult",
    "diff",
    "pull_out",
    "push_in",
]
